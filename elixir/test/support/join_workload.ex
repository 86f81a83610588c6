defmodule Trellis.Test.JoinWorkload do
  @moduledoc false

  # Random writes over three tables a join reads: orders (the FROM table)
  # -> customers (by id, and by the unique email through orders.contact)
  # -> regions (by id). No foreign keys, on purpose: a deleted customer or
  # region leaves orders pointing at nothing, which an INNER join drops and
  # a LEFT join reads as NULLs. Every kind of write a join must follow:
  # inserts, value updates on every side (a customer's rename reaches all
  # their orders), re-pointing orders.customer_id and customers.region_id,
  # changing a joined key (customers.id, regions.id, customers.email),
  # deletes on every side, multi-statement transactions. Statements that fail
  # (key or email collisions) roll back and are skipped: the tables are
  # whatever committed, and the targets must match them.

  alias Trellis.Test.{Database, SimplePG, Writers}

  @orders 3_000
  @customers 220
  @regions 14

  @doc "The three tables with their starting rows (`orders` order rows)."
  def create_tables!(pg, orders \\ 2_000) do
    SimplePG.query!(pg, """
    CREATE TABLE regions (id int PRIMARY KEY, label text, vat numeric(4, 2));
    CREATE TABLE customers (
      id int PRIMARY KEY, name text, region_id int, email text UNIQUE
    );
    CREATE TABLE orders (
      id bigint PRIMARY KEY, customer_id int, contact text, amount numeric(12, 2), note text
    );
    CREATE INDEX ON customers (region_id);
    CREATE INDEX ON orders (customer_id);
    CREATE INDEX ON orders (contact);
    INSERT INTO regions SELECT g, 'r' || g, 1 + (g % 5) * 0.05 FROM generate_series(1, 10) g;
    INSERT INTO customers
    SELECT g, 'customer ' || g, 1 + g % 11, 'c' || g || '@x' FROM generate_series(1, 160) g;
    INSERT INTO orders
    SELECT g, 1 + g % 170, 'c' || (1 + g % 180) || '@x', (g % 97) * 1.25, 'order ' || g
    FROM generate_series(1, #{orders}) g;
    """)
  end

  @doc """
  A test's set-up: a fresh database named after `prefix` with the three
  tables, and the seed its writers use (TRELLIS_SEED replays one; printed
  with `label`). Returns `%{url: url, pg: pg, seed: seed}`.
  """
  def seeded_database!(prefix, label) do
    seed = String.to_integer(System.get_env("TRELLIS_SEED") || "#{:rand.uniform(1_000_000)}")
    IO.puts("#{label} seed #{seed} (replay with TRELLIS_SEED=#{seed})")
    %{url: url, pg: pg} = Database.open!(prefix)
    create_tables!(pg)
    %{url: url, pg: pg, seed: seed}
  end

  @doc """
  The target name of the one hidden join part in the database (a GROUP BY
  over a join's join transform, target in the catalog schema `trellis`).
  """
  def hidden_join(pg) do
    SimplePG.scalar!(
      pg,
      "SELECT target_name FROM trellis.transforms WHERE target_schema = 'trellis'"
    )
  end

  @doc """
  Whether the one grouped join's group began its last build at or after its
  hidden join finished its own (both parts record when their last build
  started and finished).
  """
  def group_built_after_join?(pg) do
    SimplePG.scalar!(pg, """
    SELECT g.backfill_started_at >= j.backfill_finished_at
    FROM trellis.transforms g, trellis.transforms j
    WHERE g.target_schema = 'public' AND j.target_schema = 'trellis'
    """) == "t"
  end

  @doc "`count` writers of `rounds` writes each, started as tasks (Task.await_many them)."
  def writers(url, seed, count, rounds) do
    Enum.map(1..count, fn w -> Task.async(fn -> run(url, w, seed, rounds) end) end)
  end

  @doc """
  The differential tests' round of writes: 4 writers of 600 writes each,
  awaited; fails unless more than 1,800 committed (the rest are the
  workload's own conflicts). Returns how many committed.
  """
  def write_round!(url, seed) do
    import ExUnit.Assertions
    committed = url |> writers(seed, 4, 600) |> Task.await_many(480_000) |> Enum.sum()
    assert committed > 1_800, "only #{committed} of 2400 writes committed"
    committed
  end

  @doc """
  The crash tests' round: a fleet of two handles that both ask for staging
  (the second waits as the standby), `define` run on the first, then
  `write_through_staging_crash!/4` with the first port killed. Returns the
  second handle, for the caller's comparison and shutdown.
  """
  def staging_crash_round!(url, pg, seed, define) do
    import ExUnit.Assertions
    import Trellis.Test.Eventually, only: [eventually: 1]

    {a, b} =
      Trellis.Test.Handles.fleet!(url, [staging: true, drain_threads: 2],
        staging: true,
        drain_threads: 1
      )

    define.(a)
    Trellis.Test.Targets.converge!(a)
    assert eventually(fn -> Trellis.has_live_staging_worker(b) == {:ok, true} end)
    :ok = write_through_staging_crash!(url, pg, seed, a)
    b
  end

  @doc """
  The crash tests' writes: 3 writers of 500 writes, the port of handle
  `staging` killed -9 once ledger pages wait (so drains are under way), then
  100 more writes for the standby to stage. Returns once all are written.
  """
  def write_through_staging_crash!(url, pg, seed, staging) do
    import ExUnit.Assertions
    import Trellis.Test.Eventually, only: [eventually: 1]
    running = writers(url, seed, 3, 500)
    assert eventually(fn -> SimplePG.scalar!(pg, "SELECT count(*) FROM trellis.pages") != "0" end)
    os_pid = staging.port |> Port.info(:os_pid) |> elem(1)
    {_, 0} = System.cmd("kill", ["-9", "#{os_pid}"])
    Task.await_many(running, 240_000)
    run(url, 9, seed, 100)
    :ok
  end

  @doc """
  Runs `rounds` random writes on its own connection, seeded by (`seed`,
  `writer`), adding one to `counter` (a :counters ref, or nil) after each.
  Returns how many of them committed (the others hit a key or email
  collision and rolled back).
  """
  def run(url, writer, seed, rounds, counter \\ nil) do
    Writers.run(url, {seed, writer, 41}, rounds, &statement/0, counter)
  end

  defp statement do
    case :rand.uniform(100) do
      n when n <= 14 ->
        insert_orders()

      n when n <= 24 ->
        update_order()

      n when n <= 34 ->
        repoint_order()

      n when n <= 40 ->
        delete_orders()

      n when n <= 45 ->
        insert_customer()

      n when n <= 55 ->
        rename_customer()

      n when n <= 61 ->
        repoint_customer()

      n when n <= 64 ->
        change_customer_key()

      n when n <= 67 ->
        delete_customer()

      n when n <= 70 ->
        insert_region()

      n when n <= 76 ->
        update_region()

      n when n <= 78 ->
        change_region_key()

      n when n <= 80 ->
        delete_region()

      n when n <= 92 ->
        "BEGIN; #{repoint_order()}; #{rename_customer()}; #{update_region()}; COMMIT"

      _ ->
        "BEGIN; #{delete_customer()}; #{insert_customer()}; #{insert_orders()}; COMMIT"
    end
  end

  defp order_id, do: :rand.uniform(@orders)
  defp customer_id, do: :rand.uniform(@customers)
  defp region_id, do: :rand.uniform(@regions)
  defp maybe(value), do: if(:rand.uniform(12) == 1, do: "NULL", else: value)
  defp email, do: maybe("'c#{customer_id()}@x'")

  defp insert_orders do
    rows =
      for _ <- 1..:rand.uniform(4) do
        "(#{order_id()}, #{maybe(customer_id())}, #{email()}, #{amount()}, 'n#{:rand.uniform(99)}')"
      end

    "INSERT INTO orders VALUES #{Enum.join(rows, ", ")} ON CONFLICT DO NOTHING"
  end

  defp update_order do
    lo = order_id()

    set =
      Enum.random([
        "amount = #{amount()}",
        "note = 'u#{:rand.uniform(99)}'",
        "amount = amount + 3"
      ])

    "UPDATE orders SET #{set} WHERE id BETWEEN #{lo} AND #{lo + :rand.uniform(20)}"
  end

  defp repoint_order do
    set = Enum.random(["customer_id = #{maybe(customer_id())}", "contact = #{email()}"])
    "UPDATE orders SET #{set} WHERE id = #{order_id()}"
  end

  defp delete_orders do
    lo = order_id()
    "DELETE FROM orders WHERE id BETWEEN #{lo} AND #{lo + :rand.uniform(8)}"
  end

  defp insert_customer do
    id = customer_id()

    "INSERT INTO customers VALUES (#{id}, 'new #{id}', #{maybe(region_id())}, #{email()}) " <>
      "ON CONFLICT DO NOTHING"
  end

  defp rename_customer do
    "UPDATE customers SET name = 'renamed #{:rand.uniform(999)}' WHERE id = #{customer_id()}"
  end

  defp repoint_customer do
    set = Enum.random(["region_id = #{maybe(region_id())}", "email = #{email()}"])
    "UPDATE customers SET #{set} WHERE id = #{customer_id()}"
  end

  defp change_customer_key do
    "UPDATE customers SET id = #{customer_id()} WHERE id = #{customer_id()}"
  end

  defp delete_customer, do: "DELETE FROM customers WHERE id = #{customer_id()}"

  defp insert_region do
    id = region_id()
    "INSERT INTO regions VALUES (#{id}, 'r#{id}', 1.#{:rand.uniform(30)}) ON CONFLICT DO NOTHING"
  end

  defp update_region do
    set =
      Enum.random(["label = 'l#{:rand.uniform(9)}'", "vat = #{maybe("1.#{:rand.uniform(30)}")}"])

    "UPDATE regions SET #{set} WHERE id = #{region_id()}"
  end

  defp change_region_key, do: "UPDATE regions SET id = #{region_id()} WHERE id = #{region_id()}"
  defp delete_region, do: "DELETE FROM regions WHERE id = #{region_id()}"

  defp amount, do: Enum.random(["NULL", "0", "#{:rand.uniform(120)}.#{:rand.uniform(99)}"])
end
