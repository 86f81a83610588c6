defmodule Trellis.Joins.GroupByJoinAlterTest do
  # ALTER and request_backfill of a GROUP BY over a join (two catalog
  # transforms: a hidden join and the grouping over its target). An ALTER
  # whose aggregate reads a column the hidden join does not carry extends
  # the join and the group in one statement; the group's rebuild waits until
  # the join's is done, so it reads the new column filled. Run under two
  # writers over all three tables; after await_converged the target equals
  # the definition's query over the base tables. A refused ALTER changes
  # nothing. Seeded: replay with TRELLIS_SEED=<n>.
  use ExUnit.Case, async: false

  alias Trellis.Test.{JoinWorkload, SimplePG}
  import Trellis.Test.Eventually, only: [eventually: 1]
  import Trellis.Test.Targets

  @moduletag :port
  @moduletag timeout: 300_000

  @join "FROM orders JOIN customers ON orders.customer_id = customers.id " <>
          "LEFT JOIN regions ON customers.region_id = regions.id"
  @statement "TRANSFORM region_revenue #{@join} SELECT regions.label, " <>
               "sum(orders.amount) AS revenue, count(*) AS n GROUP BY regions.label"

  # What the target equals before any ALTER.
  @as_defined "SELECT regions.label, sum(orders.amount), count(*) #{@join} " <>
                "GROUP BY regions.label"

  # What it equals once `sum(orders.amount * regions.vat) AS gross` is added.
  @with_gross "SELECT regions.label, sum(orders.amount), count(*), " <>
                "sum(orders.amount * regions.vat) #{@join} GROUP BY regions.label"

  # A pair's build as status/2 reads it, in order; it never goes back.
  @build_states [:waiting_to_backfill, :backfilling, :catching_up, :live]

  setup do
    %{url: url} = context = JoinWorkload.seeded_database!("group_join_alter", "group join alter")
    :ok = Trellis.migrate(Trellis.connect!(url: url))
    trellis = Trellis.connect!(url: url, staging: true, drain_threads: 2)
    {:ok, {:transform_defined, _}} = Trellis.define(trellis, @statement)
    converge!(trellis)
    Map.put(context, :trellis, trellis)
  end

  defp hidden_columns(pg) do
    SimplePG.scalar!(pg, """
    SELECT string_agg(attname, ',' ORDER BY attnum) FROM pg_attribute
    WHERE attrelid = 'trellis.#{JoinWorkload.hidden_join(pg)}'::regclass AND attnum > 0 AND NOT attisdropped
    """)
  end

  # Two writers over all three tables, started now; returns the tasks and a
  # counter of the writes made so far.
  defp start_writers(url, seed, rounds) do
    counter = :counters.new(1, [])

    tasks =
      for w <- 1..2 do
        Task.async(fn -> JoinWorkload.run(url, w, seed, rounds, counter) end)
      end

    assert eventually(fn -> :counters.get(counter, 1) >= 100 end)
    tasks
  end

  # The states status/2 reads for `name` from now until it is live, each
  # once in the order seen.
  defp watch_until_live(t, name, seen \\ []) do
    {:ok, %Trellis.Status{status: state}} = Trellis.status(t, name)
    seen = if List.first(seen) == state, do: seen, else: [state | seen]

    if state == :live do
      Enum.reverse(seen)
    else
      Process.sleep(5)
      watch_until_live(t, name, seen)
    end
  end

  defp assert_build_order!(states, context) do
    positions = Enum.map(states, fn s -> Enum.find_index(@build_states, &(&1 == s)) end)
    assert Enum.all?(positions), "unexpected state in #{inspect(states)} (#{context})"
    assert positions == Enum.sort(positions), "went back: #{inspect(states)} (#{context})"
    assert List.last(states) == :live
  end

  # Runs `change` (a function, or the rest of an ALTER TRANSFORM
  # region_revenue) while two writers write over all three tables, follows
  # status/2 until live (in order, the group built after the join), then
  # waits for the writers and convergence.
  defp under_writers!(%{trellis: t} = context, alter) when is_binary(alter) do
    under_writers!(context, fn ->
      {:ok, _} = Trellis.apply(t, "ALTER TRANSFORM region_revenue #{alter}")
    end)
  end

  defp under_writers!(%{url: url, pg: pg, seed: seed, trellis: t}, change) do
    writers = start_writers(url, seed, 700)
    change.()
    states = watch_until_live(t, "region_revenue")
    assert_build_order!(states, "seed #{seed}")
    assert JoinWorkload.group_built_after_join?(pg)
    committed = writers |> Task.await_many(240_000) |> Enum.sum()
    assert committed > 1_000, "only #{committed} of 1400 writes committed"
    converge!(t, 240_000)
  end

  defp equal!(pg, seed, select, query) do
    assert differences(pg, "SELECT #{select} FROM region_revenue", query) == "0",
           "seed #{seed}; rerun with TRELLIS_SEED=#{seed}"
  end

  test "ADD COLUMN of an aggregate over a column the join does not carry, under writers",
       %{pg: pg, seed: seed, trellis: t} = context do
    assert hidden_columns(pg) == "id,regions.label,orders.amount"

    under_writers!(context, "ADD COLUMN sum(orders.amount * regions.vat) AS gross")

    # The join carries the new column, after those it had, and the group
    # routes it: it stays on the delta path (group_by/ ALTER routing).
    assert hidden_columns(pg) == "id,regions.label,orders.amount,regions.vat"

    assert SimplePG.scalar!(pg, """
           SELECT routes_values::text || ' ' || routed_columns::text
           FROM trellis.transform_inputs i JOIN trellis.transforms t ON t.id = i.transform_id
           WHERE t.target_name = 'region_revenue'
           """) == ~s(true {regions.label,orders.amount,regions.vat})

    equal!(pg, seed, "label, revenue, n, gross", @with_gross)

    # Values, not only agreement: the grand total is the join's, and not
    # zero; the NULL-region group (LEFT join, no vat) has none.
    assert SimplePG.scalar!(pg, """
           SELECT (SELECT sum(gross) FROM region_revenue) =
                  (SELECT sum(orders.amount * regions.vat) #{@join})
              AND (SELECT sum(gross) FROM region_revenue) > 0
           """) == "t"

    assert SimplePG.scalar!(
             pg,
             "SELECT count(*) FROM region_revenue WHERE label IS NULL AND gross IS NOT NULL"
           ) == "0"

    {:ok, [%Trellis.Definition{statement: shown, status: :live}]} = Trellis.definitions(t)
    assert shown =~ "sum(orders.amount * regions.vat) AS gross"
    assert {:ok, %Trellis.Status{status: :live}} = Trellis.status(t, "region_revenue")
  end

  test "ALTER COLUMN to an aggregate over a column the join does not carry, under writers",
       %{pg: pg, seed: seed, trellis: t} = context do
    under_writers!(context, "ALTER COLUMN n AS count(customers.email)")

    assert hidden_columns(pg) == "id,regions.label,orders.amount,customers.email"

    equal!(
      pg,
      seed,
      "label, revenue, n",
      "SELECT regions.label, sum(orders.amount), count(customers.email) #{@join} " <>
        "GROUP BY regions.label"
    )

    # The new count is not the old one: some orders' customers have no email.
    assert SimplePG.scalar!(pg, """
           SELECT (SELECT sum(n) FROM region_revenue) <
                  (SELECT count(*) FROM orders JOIN customers ON orders.customer_id = customers.id)
           """) == "t"

    {:ok, [%Trellis.Definition{statement: shown}]} = Trellis.definitions(t)
    assert shown =~ "count(customers.email) AS n"
  end

  test "a refused ALTER changes nothing: definitions, join columns, targets",
       %{pg: pg, seed: seed, trellis: t} do
    hidden = JoinWorkload.hidden_join(pg)

    snapshot = fn ->
      %{
        definitions: Trellis.definitions(t),
        stored:
          SimplePG.scalar!(
            pg,
            "SELECT string_agg(definition, ';' ORDER BY id) FROM trellis.transforms"
          ),
        columns:
          SimplePG.scalar!(
            pg,
            "SELECT string_agg(transform_id || ':' || name || ':' || expr || ':' || sql_type, ';' " <>
              "ORDER BY transform_id, ordinal) FROM trellis.transform_columns"
          ),
        hidden: hidden_columns(pg),
        target:
          SimplePG.scalar!(pg, """
          SELECT string_agg(attname, ',' ORDER BY attnum) FROM pg_attribute
          WHERE attrelid = 'public.region_revenue'::regclass AND attnum > 0 AND NOT attisdropped
          """),
        rows:
          SimplePG.scalar!(
            pg,
            "SELECT md5(string_agg(r::text, ';' ORDER BY r::text)) FROM region_revenue r"
          ),
        hidden_rows:
          SimplePG.scalar!(
            pg,
            "SELECT md5(string_agg(r::text, ';' ORDER BY r::text)) FROM trellis.#{hidden} r"
          ),
        jobs: SimplePG.scalar!(pg, "SELECT count(*) FROM trellis.jobs")
      }
    end

    before = snapshot.()
    assert {:ok, [%Trellis.Definition{status: :live}]} = before.definitions

    refusals = [
      # An unknown column of a joined table: refused over the join, in the
      # user's terms.
      {"ADD COLUMN sum(regions.nope) AS x", :validation, "nope"},
      # A column the join does not carry (regions.vat) next to one written
      # without its table: the join is extended, then the grouping over it
      # refused, and the extension rolled back with it.
      {"ADD COLUMN sum(regions.vat * vat) AS x", :validation, "table.column"},
      # An aggregate PostgreSQL refuses for the new column's type.
      {"ADD COLUMN sum(customers.name) AS x", :validation, "sum"},
      {"ALTER COLUMN n AS count(regions.nope)", :validation, "nope"},
      {"ALTER COLUMN revenue AS sum(regions.vat * vat)", :validation, "table.column"},
      {"ADD COLUMN max(customers.name) AS revenue", :already_exists, "revenue"}
    ]

    for {change, code, words} <- refusals do
      assert {:error, %Trellis.Error{code: ^code, message: message}} =
               Trellis.apply(t, "ALTER TRANSFORM region_revenue #{change}"),
             change

      assert message =~ words, "#{change}: #{message}"
      refute message =~ "__trellis", "#{change}: #{message}"
      assert snapshot.() == before, change
    end

    # And the transform still follows writes.
    SimplePG.query!(pg, "UPDATE orders SET amount = amount + 1 WHERE id % 3 = 0")
    converge!(t)

    equal!(pg, seed, "label, revenue, n", @as_defined)
  end

  test "request_backfill rebuilds the group only once the join is rebuilt",
       %{url: url, pg: pg, seed: seed, trellis: t} do
    # Hold the join's rebuild: its ranges write the hidden target, which this
    # session keeps from writers (readers pass, so a group build that started
    # anyway would run).
    hidden = JoinWorkload.hidden_join(pg)
    blocker = SimplePG.connect!(url)
    SimplePG.query!(blocker, "BEGIN; LOCK TABLE trellis.#{hidden} IN EXCLUSIVE MODE")

    :ok = Trellis.request_backfill(t, "region_revenue")

    raw = fn ->
      SimplePG.scalar!(
        pg,
        "SELECT string_agg(status, ',' ORDER BY target_schema = 'trellis') FROM trellis.transforms"
      )
    end

    # group, join
    assert eventually(fn -> raw.() == "waiting_to_backfill,backfilling" end)

    for _ <- 1..40 do
      assert raw.() == "waiting_to_backfill,backfilling"
      assert {:ok, %Trellis.Status{status: :backfilling}} = Trellis.status(t, "region_revenue")
      assert {:ok, [%Trellis.Definition{status: :backfilling}]} = Trellis.definitions(t)
      Process.sleep(25)
    end

    SimplePG.query!(blocker, "COMMIT")
    SimplePG.close(blocker)
    converge!(t)
    assert JoinWorkload.group_built_after_join?(pg)
    assert {:ok, %Trellis.Status{status: :live}} = Trellis.status(t, "region_revenue")

    equal!(pg, seed, "label, revenue, n", @as_defined)
  end

  test "an ALTER does not deadlock with a drain that holds the group's target",
       %{url: url, pg: pg, seed: seed, trellis: t} do
    # This session stands in for a drain that has written the group's target
    # and reads the join's next (drains lock the two in either order).
    drain = SimplePG.connect!(url)
    SimplePG.query!(drain, "BEGIN; LOCK TABLE region_revenue IN ROW EXCLUSIVE MODE")

    alter =
      Task.async(fn ->
        Trellis.apply(
          t,
          "ALTER TRANSFORM region_revenue ADD COLUMN sum(orders.amount * regions.vat) AS gross"
        )
      end)

    # Long enough for the ALTER to be after the join's target: an ALTER that
    # held it while waiting for the group's would deadlock with the read
    # below, and PostgreSQL would cancel the ALTER (it waited first).
    Process.sleep(300)

    assert {:ok, _} =
             SimplePG.query(drain, "SELECT count(*) FROM trellis.#{JoinWorkload.hidden_join(pg)}")

    SimplePG.query!(drain, "COMMIT")
    SimplePG.close(drain)
    assert {:ok, _} = Task.await(alter, 60_000)
    converge!(t)

    equal!(pg, seed, "label, revenue, n, gross", @with_gross)
  end

  test "request_backfill under writers converges, its states in order",
       %{pg: pg, seed: seed, trellis: t} = context do
    under_writers!(context, fn -> :ok = Trellis.request_backfill(t, "region_revenue") end)

    equal!(pg, seed, "label, revenue, n", @as_defined)
  end
end
