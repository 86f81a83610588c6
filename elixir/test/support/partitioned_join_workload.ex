defmodule Trellis.Test.PartitionedJoinWorkload do
  @moduledoc false

  # Random writes over `orders` and a range-partitioned `customers` that
  # orders join (as buyer and as seller): customers written through the
  # parent and naming a partition, renamed, moved between partitions (a key
  # change through the parent), deleted and re-inserted; orders inserted,
  # re-pointed and deleted. Partitions: ids 1-49, 50-99, 100-149 at first;
  # 150-199 is attached later with rows of its own, and 50-99 detached.
  # Statements that fail (a collision, an id whose partition is not there
  # at the moment, a partition detached meanwhile) roll back and are
  # skipped: the tables are whatever committed.

  alias Trellis.Test.{SimplePG, Writers}

  @orders 1_500

  @doc "The tables and their starting rows."
  @spec create_tables!(SimplePG.t()) :: [[binary | nil]]
  def create_tables!(pg) do
    SimplePG.query!(pg, """
    CREATE TABLE customers (id int PRIMARY KEY, name text, tier int) PARTITION BY RANGE (id);
    CREATE TABLE customers_a PARTITION OF customers FOR VALUES FROM (1) TO (50);
    CREATE TABLE customers_b PARTITION OF customers FOR VALUES FROM (50) TO (100);
    CREATE TABLE customers_c PARTITION OF customers FOR VALUES FROM (100) TO (150);
    CREATE TABLE orders (id bigint PRIMARY KEY, buyer_id int, seller_id int, amount numeric(12, 2));
    CREATE INDEX ON orders (buyer_id);
    CREATE INDEX ON orders (seller_id);
    INSERT INTO customers SELECT g, 'customer ' || g, g % 4 FROM generate_series(1, 149) g;
    INSERT INTO orders
    SELECT g, 1 + g % 199, 1 + (g * 7) % 199, (g % 83) * 1.5 FROM generate_series(1, 1000) g;
    """)
  end

  @doc "Makes customers_d with rows for ids 150-199, then attaches it."
  @spec attach!(SimplePG.t()) :: [[binary | nil]]
  def attach!(pg) do
    SimplePG.query!(pg, """
    CREATE TABLE customers_d (LIKE customers);
    INSERT INTO customers_d SELECT g, 'late ' || g, g % 3 FROM generate_series(150, 199) g;
    ALTER TABLE customers ATTACH PARTITION customers_d FOR VALUES FROM (150) TO (200);
    """)
  end

  @doc "Detaches ids 50-99: their rows leave customers."
  @spec detach!(SimplePG.t()) :: [[binary | nil]]
  def detach!(pg), do: SimplePG.query!(pg, "ALTER TABLE customers DETACH PARTITION customers_b")

  @doc """
  Runs `rounds` random writes on its own connection, seeded by (`seed`,
  `writer`), adding one to `counter` after each. Returns how many committed.
  """
  @spec run(String.t(), pos_integer, integer, pos_integer, :counters.counters_ref()) ::
          non_neg_integer
  def run(url, writer, seed, rounds, counter) do
    Writers.run(url, {seed, writer, 61}, rounds, &statement/0, counter)
  end

  defp statement do
    case :rand.uniform(100) do
      n when n <= 12 -> insert_orders()
      n when n <= 25 -> repoint_order()
      n when n <= 30 -> delete_orders()
      n when n <= 42 -> insert_customer()
      n when n <= 62 -> rename_customers()
      n when n <= 70 -> move_customer()
      n when n <= 78 -> delete_customer()
      n when n <= 92 -> "BEGIN; #{rename_customers()}; #{repoint_order()}; COMMIT"
      _ -> "BEGIN; #{delete_customer()}; #{insert_customer()}; #{insert_orders()}; COMMIT"
    end
  end

  defp order_id, do: :rand.uniform(@orders)
  defp customer_id, do: :rand.uniform(199)
  defp maybe(value), do: if(:rand.uniform(10) == 1, do: "NULL", else: value)
  defp amount, do: Enum.random(["NULL", "0", "#{:rand.uniform(120)}.#{:rand.uniform(99)}"])

  # The parent, or the partition that holds `id` (which may not be attached).
  defp table_of(id) do
    if :rand.uniform(2) == 1 do
      "customers"
    else
      "customers_#{Enum.at(["a", "b", "c", "d"], div(id, 50))}"
    end
  end

  defp insert_orders do
    rows =
      for _ <- 1..:rand.uniform(4) do
        "(#{order_id()}, #{maybe(customer_id())}, #{maybe(customer_id())}, #{amount()})"
      end

    "INSERT INTO orders VALUES #{Enum.join(rows, ", ")} ON CONFLICT DO NOTHING"
  end

  defp repoint_order do
    set =
      Enum.random([
        "buyer_id = #{maybe(customer_id())}",
        "seller_id = #{maybe(customer_id())}",
        "amount = #{amount()}"
      ])

    "UPDATE orders SET #{set} WHERE id = #{order_id()}"
  end

  defp delete_orders do
    lo = order_id()
    "DELETE FROM orders WHERE id BETWEEN #{lo} AND #{lo + :rand.uniform(6)}"
  end

  defp insert_customer do
    id = customer_id()

    "INSERT INTO #{table_of(id)} VALUES (#{id}, 'new #{id}', #{:rand.uniform(4)}) " <>
      "ON CONFLICT DO NOTHING"
  end

  defp rename_customers do
    id = customer_id()
    # A range within one partition, so a write naming the partition fits it.
    hi = min(id + :rand.uniform(3) - 1, div(id, 50) * 50 + 49)

    "UPDATE #{table_of(id)} SET name = 'renamed #{:rand.uniform(999)}', " <>
      "tier = #{:rand.uniform(4)} WHERE id BETWEEN #{id} AND #{hi}"
  end

  # Through the parent: the row may move to another partition.
  defp move_customer do
    "UPDATE customers SET id = #{customer_id()} WHERE id = #{customer_id()}"
  end

  defp delete_customer do
    id = customer_id()
    "DELETE FROM #{table_of(id)} WHERE id = #{id}"
  end
end
