defmodule Trellis.Joins.FanOutLifecycleTest do
  # Everything that works for the older kinds works for a fan-out join (a
  # join whose rows repeat under its root row, spec/engine.md "Joins of
  # every shape"), through the real port and PostgreSQL: ALTER TRANSFORM
  # columns under writers, PAUSE/RESUME of one column, quarantine and held
  # keys charged to root units, self-check (full and sample) clean and then
  # finding a row corrupted by hand, source index gaps with their fix, a
  # transform reading a fan-out target, a dump loaded into a new database,
  # a partitioned "many" side with rows moving between partitions, and a
  # SIGKILL of the port during the first build. Every check is exact
  # equality with the definition's query. Seeded writers (JoinWorkload):
  # replay with TRELLIS_SEED=<n>.
  use ExUnit.Case, async: false

  alias Trellis.Test.{Database, Handles, JoinWorkload, SimplePG}
  import Trellis.Test.Eventually, only: [eventually: 1, eventually: 2]
  import Trellis.Test.Targets

  @moduletag :port
  @moduletag :capture_log
  @moduletag timeout: 600_000

  # One-to-many, LEFT from the "one" side: root customers, keyed (c.id, o.id).
  @customer_orders "TRANSFORM customer_orders FROM customers c " <>
                     "LEFT JOIN orders o ON o.customer_id = c.id SELECT c.name, o.amount"
  @join "FROM customers c LEFT JOIN orders o ON o.customer_id = c.id"
  @query "SELECT c.id, o.id, c.name, o.amount #{@join}"

  # RIGHT: every customer, each of its orders or one row of NULLs.
  @orders_right "TRANSFORM orders_right FROM orders o RIGHT JOIN customers c " <>
                  "ON o.customer_id = c.id SELECT c.name, o.note"
  @orders_right_query "SELECT c.id, o.id, c.name, o.note FROM orders o " <>
                        "RIGHT JOIN customers c ON o.customer_id = c.id"

  # Many-to-many self join: customers of one region.
  @neighbours "TRANSFORM neighbours FROM customers a JOIN customers b " <>
                "ON b.region_id = a.region_id SELECT a.name, b.name AS other"
  @neighbours_query "SELECT a.id, b.id, a.name, b.name FROM customers a " <>
                      "JOIN customers b ON b.region_id = a.region_id"

  setup do: JoinWorkload.seeded_database!("fan_out_lifecycle", "fan-out lifecycle")

  # A migrated catalog and a handle with `opts`, each call given 60 s (the
  # machine may be busy), shut down when the test ends.
  defp start!(url, opts \\ [staging: true, drain_threads: 2]) do
    :ok = briefly(url, [], &Trellis.migrate/1)
    {:ok, handle} = Trellis.connect([url: url, timeout_ms: 60_000] ++ opts)
    on_exit(fn -> Trellis.shutdown(handle) end)
    handle
  end

  # Runs `fun` with a handle of `opts`, shut down after: 60 s per call (a
  # define ran past 9 s at load 24).
  defp briefly(url, opts, fun),
    do: Handles.with_handle(url, [timeout_ms: 60_000] ++ opts, fun)

  defp define!(t, statement), do: {:ok, {:transform_defined, _}} = Trellis.define(t, statement)

  defp status!(t, name) do
    {:ok, status} = Trellis.status(t, name)
    status
  end

  defp equal!(pg, target, query, context) do
    assert differences(pg, target, query) == "0", "#{target} differs (#{context})"
  end

  # `rounds` writes by each of `count` writers over all three tables, started
  # now; returns once some have committed (so what follows runs under them).
  defp start_writers(url, seed, count, rounds) do
    counter = :counters.new(1, [])

    tasks =
      for w <- 1..count do
        Task.async(fn -> JoinWorkload.run(url, w, seed, rounds, counter) end)
      end

    assert eventually(fn -> :counters.get(counter, 1) >= 50 end)
    tasks
  end

  defp finish_writers(tasks), do: tasks |> Task.await_many(300_000) |> Enum.sum()

  test "ALTER TRANSFORM ADD, ALTER and DROP COLUMN of a one-to-many and a self join, " <>
         "under writers",
       %{url: url, pg: pg, seed: seed} do
    t = start!(url)
    define!(t, @customer_orders)
    define!(t, @neighbours)
    converge!(t)
    context = "seed #{seed}; rerun with TRELLIS_SEED=#{seed}"
    writers = start_writers(url, seed, 2, 600)

    {:ok, _} = Trellis.apply(t, "ALTER TRANSFORM customer_orders ADD COLUMN o.note AS note")
    {:ok, _} = Trellis.apply(t, "ALTER TRANSFORM neighbours ADD COLUMN b.email AS email")

    {:ok, _} =
      Trellis.apply(t, "ALTER TRANSFORM customer_orders ALTER COLUMN amount AS o.amount * 2")

    {:ok, _} = Trellis.apply(t, "ALTER TRANSFORM customer_orders DROP COLUMN name")
    {:ok, _} = Trellis.apply(t, "ALTER TRANSFORM neighbours DROP COLUMN name")
    assert finish_writers(writers) > 800
    converge!(t, 240_000)

    equal!(
      pg,
      ~s{SELECT "c.id", "o.id", amount, note FROM customer_orders},
      "SELECT c.id, o.id, o.amount * 2, o.note #{@join}",
      context
    )

    equal!(
      pg,
      ~s{SELECT "a.id", "b.id", other, email FROM neighbours},
      "SELECT a.id, b.id, b.name, b.email FROM customers a " <>
        "JOIN customers b ON b.region_id = a.region_id",
      context
    )

    # The key is untouched by the column changes; the ALTERs are in the
    # definitions; a key column cannot be dropped.
    assert SimplePG.scalar!(pg, """
           SELECT string_agg(attname, ',' ORDER BY attnum) FROM pg_attribute
           WHERE attrelid = 'customer_orders'::regclass AND attnum > 0 AND NOT attisdropped
           """) == "c.id,o.id,amount,note"

    {:ok, definitions} = Trellis.definitions(t)
    shown = Enum.find(definitions, &(&1.name == "customer_orders")).statement
    assert shown =~ "o.amount * 2 AS amount"
    assert shown =~ "o.note AS note"
    refute shown =~ "c.name"

    assert {:error, %Trellis.Error{code: :validation}} =
             Trellis.apply(t, ~s{ALTER TRANSFORM customer_orders DROP COLUMN "o.id"})

    # And maintenance goes on with the new columns.
    SimplePG.query!(pg, "UPDATE orders SET note = 'late', amount = 7 WHERE customer_id = 5")
    SimplePG.query!(pg, "UPDATE customers SET email = 'moved@x' WHERE id = 6")
    converge!(t)

    equal!(
      pg,
      ~s{SELECT "c.id", "o.id", amount, note FROM customer_orders},
      "SELECT c.id, o.id, o.amount * 2, o.note #{@join}",
      "after the ALTERs"
    )

    equal!(
      pg,
      ~s{SELECT "a.id", "b.id", other, email FROM neighbours},
      "SELECT a.id, b.id, b.name, b.email FROM customers a " <>
        "JOIN customers b ON b.region_id = a.region_id",
      "after the ALTERs"
    )
  end

  test "PAUSE and RESUME of one column of a one-to-many and a RIGHT join",
       %{url: url, pg: pg, seed: seed} do
    t = start!(url)
    define!(t, @customer_orders)
    define!(t, @orders_right)
    converge!(t)

    {:ok, :paused} = Trellis.apply(t, "PAUSE TRANSFORM customer_orders.amount")
    {:ok, :paused} = Trellis.apply(t, "PAUSE TRANSFORM orders_right.note")

    SimplePG.query!(pg, """
    UPDATE orders SET amount = amount + 1000, note = 'paused' WHERE customer_id <= 40;
    UPDATE customers SET name = 'renamed ' || id WHERE id % 3 = 0;
    INSERT INTO orders VALUES (900001, 7, NULL, 55, 'new');
    DELETE FROM orders WHERE customer_id = 9;
    """)

    converge!(t)
    # The live column and the key follow; the paused column does not.
    equal!(
      pg,
      ~s{SELECT "c.id", "o.id", name FROM customer_orders},
      "SELECT c.id, o.id, c.name #{@join}",
      "paused"
    )

    equal!(
      pg,
      ~s{SELECT "c.id", "o.id", name FROM orders_right},
      "SELECT c.id, o.id, c.name FROM orders o RIGHT JOIN customers c ON o.customer_id = c.id",
      "paused"
    )

    assert differences(pg, "TABLE customer_orders", @query) != "0"
    assert differences(pg, "TABLE orders_right", @orders_right_query) != "0"
    status = status!(t, "customer_orders")
    assert Enum.find(status.columns, &(&1.name == "amount")).state == :paused
    assert Enum.find(status.columns, &(&1.name == "name")).state == :live

    writers = start_writers(url, seed, 2, 400)

    assert {:ok, {:resumed, ["customer_orders.amount"]}} =
             Trellis.apply(t, "RESUME TRANSFORM customer_orders.amount")

    assert {:ok, {:resumed, ["orders_right.note"]}} =
             Trellis.apply(t, "RESUME TRANSFORM orders_right.note")

    assert finish_writers(writers) > 500
    converge!(t, 240_000)
    context = "resumed; seed #{seed}"
    equal!(pg, "TABLE customer_orders", @query, context)
    equal!(pg, "TABLE orders_right", @orders_right_query, context)
    assert status!(t, "customer_orders").columns |> Enum.all?(&(&1.state == :live))
  end

  # Every recorded quarantine sample of `target`, keys only, sorted.
  defp quarantined_keys(t, target) do
    {:ok, %Trellis.SamplePage{samples: samples, next_cursor: nil}} =
      Trellis.sample_quarantined(t, target, limit: 100)

    samples |> Enum.map(& &1.key) |> Enum.sort()
  end

  defp column(t, name, column), do: Enum.find(status!(t, name).columns, &(&1.name == column))

  test "a failing value quarantines its side unit's row; a refused row holds its unit; " <>
         "both are released once the data is fixed",
       %{url: url, pg: pg} do
    # No order starts with a zero amount: the first build is clean.
    SimplePG.query!(pg, "UPDATE orders SET amount = 1 WHERE amount = 0")
    t = start!(url)
    define!(t, "TRANSFORM unit_prices #{@join} SELECT c.name, 1000 / o.amount AS per")
    converge!(t)
    assert %{state: :live} = column(t, "unit_prices", "per")

    # Orders 10 and 11 belong to customers 11 and 12 (1 + id % 170). One
    # input repeats under the root (orders under customers), so each order
    # is a unit of its own (side units): the two failing rows hold NULL in
    # the failing column, and their customers' other rows keep their values.
    SimplePG.query!(pg, "UPDATE orders SET amount = 0 WHERE id IN (10, 11)")
    converge!(t)

    quarantined = fn rows ->
      "SELECT c.id, o.id, c.name, CASE WHEN (c.id, o.id) IN (#{rows}) THEN NULL " <>
        "ELSE 1000 / o.amount END #{@join}"
    end

    assert %{state: :paused, paused_kind: :quarantine} = column(t, "unit_prices", "per")
    assert %{state: :live} = column(t, "unit_prices", "name")
    assert quarantined_keys(t, "unit_prices.per") == [["11", "10"], ["12", "11"]]

    assert {:ok, [%Trellis.QuarantineEntry{target: "unit_prices.per", rows: 2, reason: why}]} =
             Trellis.quarantined(t)

    assert why =~ "division by zero"
    equal!(pg, "TABLE unit_prices", quarantined.("(11, 10), (12, 11)"), "quarantined")

    # A customer's write recomputes all its rows (its whole root): the
    # quarantined row stays NULL, the others take the new name.
    SimplePG.query!(pg, "UPDATE customers SET name = 'renamed' WHERE id IN (11, 40)")
    converge!(t)
    equal!(pg, "TABLE unit_prices", quarantined.("(11, 10), (12, 11)"), "a root recomputed")
    assert quarantined_keys(t, "unit_prices.per") == [["11", "10"], ["12", "11"]]

    # Other units keep flowing; the write that fixes order 11 brings its
    # value back.
    SimplePG.query!(pg, """
    UPDATE orders SET amount = amount + 2 WHERE customer_id IN (12, 50, 51);
    INSERT INTO orders VALUES (900001, 60, NULL, 4, 'new');
    """)

    converge!(t)
    equal!(pg, "TABLE unit_prices", quarantined.("(11, 10)"), "one fixed by a write")
    assert quarantined_keys(t, "unit_prices.per") == [["11", "10"]]

    # The last one fixed: the column is live again without a RESUME.
    SimplePG.query!(pg, "UPDATE orders SET amount = 3 WHERE id = 10")
    converge!(t)
    assert eventually(fn -> column(t, "unit_prices", "per").state == :live end)
    assert {:ok, []} = Trellis.quarantined(t)
    equal!(pg, "TABLE unit_prices", "SELECT c.id, o.id, c.name, 1000 / o.amount #{@join}", "live")

    # A row the target refuses holds its unit (its rows stay as they were);
    # a customer's write is a whole-root unit, its side key NULL, and
    # release_key/4 takes the unit's key.
    SimplePG.query!(
      pg,
      "ALTER TABLE unit_prices ADD CONSTRAINT not_held CHECK (name <> 'held') NOT VALID"
    )

    SimplePG.query!(pg, "UPDATE customers SET name = 'held' WHERE id = 20")
    SimplePG.query!(pg, "UPDATE customers SET name = 'flows' WHERE id = 21")
    converge!(t)

    assert %{status: :live, held_keys: 1, drain_failure: nil} = status!(t, "unit_prices")
    assert SimplePG.query!(pg, "SELECT key FROM trellis.held_keys") == [["{20,NULL}"]]

    held =
      "SELECT c.id, o.id, CASE WHEN c.id = 20 THEN 'customer 20' ELSE c.name END, " <>
        "1000 / o.amount #{@join}"

    equal!(pg, "TABLE unit_prices", held, "held")

    assert {:error, %Trellis.Error{code: :database, message: message}} =
             Trellis.release_key(t, "unit_prices", [20, nil], [])

    assert message =~ "stays held" and message =~ "not_held"

    assert {:error, %Trellis.Error{code: :validation}} =
             Trellis.release_key(t, "unit_prices", [20])

    assert {:error, %Trellis.Error{code: :not_found}} =
             Trellis.release_key(t, "unit_prices", [21, nil])

    SimplePG.query!(pg, "ALTER TABLE unit_prices DROP CONSTRAINT not_held")
    assert :ok = Trellis.release_key(t, "unit_prices", ["20", nil], [])
    assert %{held_keys: 0} = status!(t, "unit_prices")

    equal!(
      pg,
      "TABLE unit_prices",
      "SELECT c.id, o.id, c.name, 1000 / o.amount #{@join}",
      "released"
    )
  end

  # Runs a self-check of `name` with `opts` and returns its report.
  defp self_check!(t, name, opts) do
    {:ok, %Trellis.SelfCheckJob{id: id}} = Trellis.self_check(t, name, opts)
    assert %{state: :done, report: report} = await_self_check!(t, id)
    report
  end

  test "self-check, full and sample, is clean on a converged fan-out target and finds a " <>
         "changed, a deleted and an added row among the many rows of their units",
       %{url: url, pg: pg, seed: seed} do
    t = start!(url)
    define!(t, @customer_orders)
    define!(t, @neighbours)
    writers = start_writers(url, seed, 2, 300)
    assert finish_writers(writers) > 400
    converge!(t, 240_000)
    equal!(pg, "TABLE customer_orders", @query, "seed #{seed}")

    for name <- ["customer_orders", "neighbours"],
        opts <- [[mode: :full], [mode: :sample, sample_size: 25]] do
      report = self_check!(t, name, opts)
      assert %{outcome: :clean, divergence_count: 0} = report, "#{name} #{inspect(opts)}"
      assert report.rows_compared > 0
    end

    # One order of each of three customers who have many: a value changed,
    # a row deleted, a row no order computes added.
    [[changed_c, changed_o], [deleted_c, deleted_o], [added_c, _]] =
      SimplePG.query!(pg, """
      SELECT "c.id", min("o.id") FROM customer_orders
      WHERE "o.id" IS NOT NULL GROUP BY "c.id" HAVING count(*) > 3 ORDER BY "c.id" LIMIT 3
      """)

    SimplePG.query!(pg, """
    UPDATE customer_orders SET amount = -1 WHERE "o.id" = #{changed_o};
    DELETE FROM customer_orders WHERE "o.id" = #{deleted_o};
    INSERT INTO customer_orders VALUES (#{added_c}, 99999999, 'ghost', 1);
    """)

    # (a changed row differs both ways)
    assert differences(pg, "TABLE customer_orders", @query) == "4"

    expected = [
      {:differs, [changed_c, changed_o]},
      {:missing, [deleted_c, deleted_o]},
      {:extra, [added_c, "99999999"]}
    ]

    # A sample larger than the 220 or so units draws every one.
    for opts <- [[mode: :full], [mode: :sample, sample_size: 1000]] do
      report = self_check!(t, "customer_orders", opts)
      assert %{outcome: :diverged, divergence_count: 3} = report, inspect(opts)

      assert report.divergences |> Enum.map(&{&1.kind, &1.key}) |> Enum.sort() ==
               Enum.sort(expected),
             inspect(opts)
    end

    # A self-join row changed by hand is found too.
    SimplePG.query!(pg, ~s{UPDATE neighbours SET other = 'nobody' WHERE ctid =
                           (SELECT min(ctid) FROM neighbours)})

    assert %{outcome: :diverged, divergence_count: 1} = self_check!(t, "neighbours", mode: :full)

    # The check repairs nothing; a rebuild does.
    :ok = Trellis.request_backfill(t, "customer_orders")
    converge!(t)
    assert eventually(fn -> status!(t, "customer_orders").status == :live end)
    equal!(pg, "TABLE customer_orders", @query, "rebuilt")
    assert %{outcome: :clean} = self_check!(t, "customer_orders", mode: :full)
  end

  test "a missing index for the join lookup is a gap with its CREATE INDEX; it closes once " <>
         "the index exists, and maintenance is exact meanwhile",
       %{url: url, pg: pg} do
    SimplePG.query!(pg, "DROP INDEX orders_customer_id_idx")
    t = start!(url)
    define!(t, @customer_orders)
    define!(t, @orders_right)

    fix = ~s{CREATE INDEX CONCURRENTLY ON "public"."orders" ("customer_id")}

    # orders is joined in one and the FROM table of the other: a recompute
    # of a customer's unit looks its orders up by customer_id in both.
    for {name, role} <- [{"customer_orders", :join_joined}, {"orders_right", :join_from}] do
      assert [
               %Trellis.SourceIndexGap{
                 table: "public.orders",
                 columns: [~s("customer_id")],
                 role: ^role,
                 opted_out: false,
                 fix: ^fix
               }
             ] = status!(t, name).source_index_gaps
    end

    SimplePG.query!(pg, """
    UPDATE customers SET name = 'renamed' WHERE id < 30;
    UPDATE orders SET customer_id = 3 WHERE id BETWEEN 100 AND 140;
    DELETE FROM orders WHERE customer_id = 4;
    """)

    converge!(t)
    equal!(pg, "TABLE customer_orders", @query, "with the gap")
    equal!(pg, "TABLE orders_right", @orders_right_query, "with the gap")

    SimplePG.query!(pg, fix)
    assert status!(t, "customer_orders").source_index_gaps == []
    assert status!(t, "orders_right").source_index_gaps == []

    # Opted out: listed as such. Joined on a column no index has on either
    # side, both lookups lack one: customers by name (which units an order's
    # change reaches) and orders by note (a unit's recompute).
    define!(
      t,
      "TRANSFORM by_contact FROM customers c LEFT JOIN orders o ON o.note = c.name " <>
        "SELECT o.amount WITHOUT SOURCE INDEX"
    )

    assert [
             %Trellis.SourceIndexGap{
               table: "public.customers",
               columns: [~s("name")],
               role: :join_from,
               opted_out: true
             },
             %Trellis.SourceIndexGap{
               table: "public.orders",
               columns: [~s("note")],
               role: :join_joined,
               opted_out: true
             }
           ] = Enum.sort_by(status!(t, "by_contact").source_index_gaps, & &1.table)
  end

  test "a projection and a GROUP BY over a LEFT fan-out target (NULL-keyed rows included) " <>
         "and a projection over an INNER one are exact after writes",
       %{url: url, pg: pg, seed: seed} do
    t = start!(url)
    define!(t, @customer_orders)
    define!(t, @neighbours)

    # Keyed (c.id, o.id), NULL in o.id for a customer without orders.
    define!(
      t,
      "TRANSFORM tagged FROM customer_orders SELECT name, coalesce(amount, -1) AS amount_or_none"
    )

    define!(
      t,
      "TRANSFORM per_name FROM customer_orders SELECT name, count(*) AS n, " <>
        "count(amount) AS priced, sum(amount) AS total GROUP BY name"
    )

    define!(t, "TRANSFORM pairs FROM neighbours SELECT name || '/' || other AS pair")
    tagged = "SELECT c.id, o.id, c.name, coalesce(o.amount, -1) #{@join}"

    per_name = "SELECT c.name, count(*), count(o.amount), sum(o.amount) #{@join} GROUP BY c.name"

    pairs =
      "SELECT a.id, b.id, a.name || '/' || b.name FROM customers a " <>
        "JOIN customers b ON b.region_id = a.region_id"

    check = fn context ->
      converge!(t, 240_000)
      equal!(pg, "TABLE customer_orders", @query, context)
      equal!(pg, ~s{SELECT "c.id", "o.id", name, amount_or_none FROM tagged}, tagged, context)
      equal!(pg, "SELECT name, n, priced, total FROM per_name", per_name, context)
      equal!(pg, "TABLE pairs", pairs, context)
    end

    check.("built")

    # A customer's last order goes (its NULL-keyed row appears upstream),
    # one comes back (it goes), a customer without orders is added and
    # renamed.
    SimplePG.query!(pg, "DELETE FROM orders WHERE customer_id = 7")
    check.("customer 7 without orders")

    assert SimplePG.scalar!(pg, ~s{SELECT "c.id" FROM tagged WHERE "o.id" IS NULL}) ==
             "7"

    SimplePG.query!(pg, "INSERT INTO orders VALUES (900001, 7, NULL, 12, 'back')")
    check.("customer 7 with an order again")
    SimplePG.query!(pg, "INSERT INTO customers VALUES (165, 'new', 1, NULL)")
    check.("a new customer without orders")
    SimplePG.query!(pg, "UPDATE customers SET name = 'lonely', region_id = 2 WHERE id = 165")
    SimplePG.query!(pg, "DELETE FROM orders WHERE customer_id = 8")
    SimplePG.query!(pg, "UPDATE customers SET name = 'customer 9' WHERE id = 8")
    check.("renamed customers without orders")

    assert finish_writers(start_writers(url, seed, 3, 500)) > 900
    check.("after writers; seed #{seed}, rerun with TRELLIS_SEED=#{seed}")
  end

  defp pg_bin(tool),
    do: Path.join(System.get_env("TRELLIS_PG_BIN", "/usr/lib/postgresql/15/bin"), tool)

  defp run!(tool, args) do
    {out, status} = System.cmd(pg_bin(tool), args, stderr_to_stdout: true)
    assert status == 0, "#{tool} #{Enum.join(args, " ")} failed: #{out}"
    out
  end

  test "a schema dump with dump_definitions_sql/1 loaded into a new database rebuilds every " <>
         "fan-out target equal to its query",
       %{url: url, pg: pg, seed: seed} do
    transforms = [
      {"customer_orders", @customer_orders, @query},
      {"orders_right", @orders_right, @orders_right_query},
      {"neighbours", @neighbours, @neighbours_query}
    ]

    briefly(url, [], &Trellis.migrate/1)

    briefly(url, [staging: true, drain_threads: 2], fn t ->
      define_all!(t, transforms)
      assert_all_equal(t, pg, transforms, "before the dump")
    end)

    # As `mix ecto.dump` does: the schema without data, owners or grants,
    # then the definitions.
    file = Path.join(System.tmp_dir!(), "fan_out_dump_#{System.unique_integer([:positive])}.sql")
    on_exit(fn -> File.rm(file) end)
    run!("pg_dump", ["--schema-only", "--no-owner", "--no-acl", "-f", file, url])
    definitions = briefly(url, [], &Trellis.dump_definitions_sql!/1)
    assert definitions =~ "'fan_out_join'"
    File.write!(file, definitions, [:append])

    loaded = Database.create!("fan_out_loaded")
    run!("psql", ["-q", "-v", "ON_ERROR_STOP=1", "--single-transaction", "-f", file, loaded])
    to = SimplePG.connect!(loaded)
    on_exit(fn -> SimplePG.close(to) end)

    # The key constraints came with the schema.
    assert SimplePG.scalar!(to, """
           SELECT pg_get_constraintdef(oid) FROM pg_constraint
           WHERE conrelid = 'customer_orders'::regclass AND contype = 'u'
           """) == ~s{UNIQUE NULLS NOT DISTINCT ("c.id", "o.id")}

    # The same rows as the first database's, written through capture.
    SimplePG.query!(to, """
    INSERT INTO regions SELECT g, 'r' || g, 1 + (g % 5) * 0.05 FROM generate_series(1, 10) g;
    INSERT INTO customers
    SELECT g, 'customer ' || g, 1 + g % 11, 'c' || g || '@x' FROM generate_series(1, 170) g;
    INSERT INTO orders
    SELECT g, 1 + g % 180, NULL, (g % 97) * 1.25, 'order ' || g FROM generate_series(1, 2500) g;
    """)

    t = start!(loaded)
    assert_all_equal(t, to, transforms, "loaded")

    {:ok, definitions} = Trellis.definitions(t)

    assert definitions |> Enum.map(& &1.name) |> Enum.sort() ==
             Enum.map(transforms, &elem(&1, 0)) |> Enum.sort()

    assert finish_writers(start_writers(loaded, seed, 2, 400)) > 500
    assert_all_equal(t, to, transforms, "loaded, after writers; seed #{seed}")
  end

  test "a partitioned many side: writes through the parent and by partition, orders moving " <>
         "between partitions and between customers, exact",
       %{url: url, pg: pg, seed: seed} do
    # orders partitioned by customer: re-pointing an order moves its row to
    # another partition (and to another customer's unit).
    SimplePG.query!(pg, """
    DROP TABLE orders;
    CREATE TABLE orders (
      id bigint, customer_id int, contact text, amount numeric(12, 2), note text,
      PRIMARY KEY (id, customer_id)
    ) PARTITION BY RANGE (customer_id);
    CREATE TABLE orders_low PARTITION OF orders FOR VALUES FROM (MINVALUE) TO (80);
    CREATE TABLE orders_high PARTITION OF orders FOR VALUES FROM (80) TO (MAXVALUE);
    CREATE INDEX ON orders (customer_id);
    INSERT INTO orders
    SELECT g, 1 + g % 170, NULL, (g % 97) * 1.25, 'order ' || g FROM generate_series(1, 2000) g;
    """)

    customer_orders_query = ~s{SELECT c.id, o.id, o.customer_id, c.name, o.amount #{@join}}

    inner =
      "TRANSFORM orders_of_customers FROM customers c JOIN orders o ON o.customer_id = c.id " <>
        "SELECT o.id AS order_id, c.name, o.amount"

    inner_query =
      "SELECT o.id, o.customer_id, c.name, o.amount FROM customers c " <>
        "JOIN orders o ON o.customer_id = c.id"

    transforms = [
      {"customer_orders", @customer_orders, customer_orders_query},
      {"orders_of_customers", inner, inner_query}
    ]

    t = start!(url)
    define_all!(t, transforms)
    assert_all_equal(t, pg, transforms, "built")

    steps = [
      "UPDATE orders SET customer_id = customer_id + 100 WHERE customer_id BETWEEN 10 AND 20",
      "UPDATE orders SET customer_id = 3 WHERE customer_id = 150",
      "UPDATE orders_low SET amount = 0, note = 'low' WHERE customer_id = 4",
      "INSERT INTO orders_high VALUES (700001, 99, NULL, 5, 'by partition')",
      "DELETE FROM orders_low WHERE customer_id = 5",
      "UPDATE customers SET name = 'moved ' || id WHERE id IN (3, 99, 115)",
      "BEGIN; UPDATE orders SET customer_id = 160 WHERE id = 40; " <>
        "UPDATE orders SET customer_id = 6 WHERE customer_id = 160 AND id <> 40; COMMIT"
    ]

    for step <- steps do
      SimplePG.query!(pg, step)
      assert_all_equal(t, pg, transforms, step)
    end

    assert SimplePG.scalar!(pg, "SELECT count(*) FROM orders_low WHERE customer_id = 3") != "0"
    assert finish_writers(start_writers(url, seed, 3, 500)) > 600
    assert_all_equal(t, pg, transforms, "after writers; seed #{seed}")
  end

  test "SIGKILL of the port during a fan-out join's first build: a new handle finishes it",
       %{url: url, pg: pg} do
    SimplePG.query!(pg, """
    INSERT INTO customers SELECT g, 'customer ' || g, 1 + g % 11, NULL
    FROM generate_series(1000, 20999) g
    """)

    # In statements of 50,000 rows (each within the session's read timeout
    # on a busy machine): 200,000 orders, some of customers that do not
    # exist.
    for first <- 10_001..200_000//50_000 do
      SimplePG.query!(pg, """
      INSERT INTO orders SELECT g, 1000 + g % 21000, NULL, g % 50, 'bulk ' || g
      FROM generate_series(#{first}, #{first + 49_999}) g
      """)
    end

    SimplePG.query!(pg, "ANALYZE")

    :ok = briefly(url, [], &Trellis.migrate/1)
    {:ok, a} = Trellis.connect(url: url, staging: true, drain_threads: 2, timeout_ms: 60_000)
    define!(a, @customer_orders)

    # Killed while the build's statement that fills the target runs (the
    # first build appends its ranges, then adds the key).
    building = """
    SELECT count(*) FROM pg_stat_activity
    WHERE datname = current_database() AND state = 'active' AND pid <> pg_backend_pid()
      AND query LIKE '%INSERT INTO%customer_orders%'
    """

    assert eventually(fn -> SimplePG.scalar!(pg, building) != "0" end, 15_000)
    assert %{status: :backfilling} = status!(a, "customer_orders")
    os_pid = a.port |> Port.info(:os_pid) |> elem(1)
    {_, 0} = System.cmd("kill", ["-9", "#{os_pid}"])
    # Its session ends once the statement finds no client (the statement's
    # transaction rolls back).
    assert eventually(fn -> SimplePG.scalar!(pg, building) == "0" end, 6000)
    written = SimplePG.scalar!(pg, "SELECT count(*) FROM customer_orders") |> String.to_integer()
    total = SimplePG.scalar!(pg, "SELECT count(*) FROM (#{@query}) q") |> String.to_integer()
    IO.puts("fan-out build killed with #{written} of #{total} rows written")
    assert written < total

    # Writes while no port runs: capture keeps them for the next one.
    SimplePG.query!(pg, """
    UPDATE customers SET name = 'after the kill' WHERE id % 7 = 0;
    DELETE FROM orders WHERE id % 11 = 0;
    UPDATE orders SET customer_id = 5 WHERE id BETWEEN 500 AND 520;
    """)

    b = start!(url)
    converge!(b, 300_000)
    assert eventually(fn -> status!(b, "customer_orders").status == :live end)
    equal!(pg, "TABLE customer_orders", @query, "after the kill")
  end
end
