defmodule Trellis.Test.TwiceJoinedWorkload do
  @moduledoc false

  # Random writes over `orders` and `customers`, where an order reads
  # customers three times: its buyer (by id), its seller (by the unique
  # email) and its buyer's referrer (customers again, reached from the
  # buyer). So one customer row can be a buyer, a seller and a referrer of
  # different orders at once, and every write to it must reach each of
  # them: renames, email and referrer changes, key changes, deletes and
  # re-inserts; and on the order side, re-pointing buyer and seller.
  # Statements that fail (a key or email collision) roll back and are
  # skipped: the tables are whatever committed.

  alias Trellis.Test.{SimplePG, Writers}

  @orders 1_500
  @customers 120

  @doc "The two tables and their starting rows."
  @spec create_tables!(SimplePG.t()) :: [[binary | nil]]
  def create_tables!(pg) do
    SimplePG.query!(pg, """
    CREATE TABLE customers (
      id int PRIMARY KEY, name text, email text UNIQUE, referrer_id int
    );
    CREATE TABLE orders (
      id bigint PRIMARY KEY, buyer_id int, seller_email text, amount numeric(12, 2)
    );
    CREATE INDEX ON customers (referrer_id);
    CREATE INDEX ON orders (buyer_id);
    CREATE INDEX ON orders (seller_email);
    INSERT INTO customers
    SELECT g, 'customer ' || g, 'c' || g || '@x', nullif(g % 13, 0) FROM generate_series(1, 100) g;
    INSERT INTO orders
    SELECT g, 1 + g % 110, 'c' || (1 + g % 105) || '@x', (g % 89) * 1.5
    FROM generate_series(1, 1000) g;
    """)
  end

  @doc """
  Runs `rounds` random writes on its own connection, seeded by (`seed`,
  `writer`). Returns how many committed.
  """
  @spec run(String.t(), pos_integer, integer, pos_integer) :: non_neg_integer
  def run(url, writer, seed, rounds) do
    Writers.run(url, {seed, writer, 53}, rounds, &statement/0)
  end

  defp statement do
    case :rand.uniform(100) do
      n when n <= 12 -> insert_orders()
      n when n <= 22 -> update_orders()
      n when n <= 34 -> repoint_order()
      n when n <= 40 -> delete_orders()
      n when n <= 48 -> insert_customer()
      n when n <= 60 -> rename_customers()
      n when n <= 70 -> repoint_customer()
      n when n <= 75 -> change_customer_key()
      n when n <= 80 -> delete_customer()
      n when n <= 92 -> "BEGIN; #{rename_customers()}; #{repoint_order()}; COMMIT"
      _ -> "BEGIN; #{delete_customer()}; #{insert_customer()}; #{repoint_customer()}; COMMIT"
    end
  end

  defp order_id, do: :rand.uniform(@orders)
  defp customer_id, do: :rand.uniform(@customers)
  defp maybe(value), do: if(:rand.uniform(10) == 1, do: "NULL", else: value)
  defp email, do: maybe("'c#{customer_id()}@x'")
  defp amount, do: Enum.random(["NULL", "0", "#{:rand.uniform(120)}.#{:rand.uniform(99)}"])

  defp insert_orders do
    rows =
      for _ <- 1..:rand.uniform(4) do
        "(#{order_id()}, #{maybe(customer_id())}, #{email()}, #{amount()})"
      end

    "INSERT INTO orders VALUES #{Enum.join(rows, ", ")} ON CONFLICT DO NOTHING"
  end

  defp update_orders do
    lo = order_id()
    "UPDATE orders SET amount = #{amount()} WHERE id BETWEEN #{lo} AND #{lo + :rand.uniform(15)}"
  end

  defp repoint_order do
    set =
      Enum.random([
        "buyer_id = #{maybe(customer_id())}",
        "seller_email = #{email()}",
        "buyer_id = #{customer_id()}, seller_email = #{email()}"
      ])

    "UPDATE orders SET #{set} WHERE id = #{order_id()}"
  end

  defp delete_orders do
    lo = order_id()
    "DELETE FROM orders WHERE id BETWEEN #{lo} AND #{lo + :rand.uniform(6)}"
  end

  defp insert_customer do
    id = customer_id()

    "INSERT INTO customers VALUES (#{id}, 'new #{id}', #{email()}, #{maybe(customer_id())}) " <>
      "ON CONFLICT DO NOTHING"
  end

  # One customer, or a small range: a statement that renames a buyer of
  # some orders and the seller or referrer of others.
  defp rename_customers do
    lo = customer_id()

    "UPDATE customers SET name = 'renamed #{:rand.uniform(999)}' " <>
      "WHERE id BETWEEN #{lo} AND #{lo + :rand.uniform(3) - 1}"
  end

  defp repoint_customer do
    set = Enum.random(["email = #{email()}", "referrer_id = #{maybe(customer_id())}"])
    "UPDATE customers SET #{set} WHERE id = #{customer_id()}"
  end

  defp change_customer_key do
    "UPDATE customers SET id = #{customer_id()} WHERE id = #{customer_id()}"
  end

  defp delete_customer, do: "DELETE FROM customers WHERE id = #{customer_id()}"
end
