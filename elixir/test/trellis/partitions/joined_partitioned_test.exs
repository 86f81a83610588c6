defmodule Trellis.Partitions.JoinedPartitionedTest do
  # A partitioned table as the JOINED side (issue 12): customers, range
  # partitioned by id, joined by orders twice (buyer and seller). Writes
  # through the parent and naming a partition, a partition attached (its
  # customers appear in the INNER join and fill LEFT-joined columns) and one
  # detached (its customers leave: INNER rows go, LEFT columns turn NULL).
  # A join target is keyed by its FROM table, not by customers, so an
  # attached or detached partition of a joined table makes relation_sync
  # rebuild the readers (spec/engine.md "Partitioned and inherited
  # sources"). Seeded; replay with TRELLIS_SEED=<n>.
  use ExUnit.Case, async: false

  alias Trellis.Test.{Database, Handles, PartitionedJoinWorkload, SimplePG, Writers}
  import Trellis.Test.Targets

  @moduletag :port
  @moduletag timeout: 600_000

  # name, definition, the query its target must equal
  @transforms [
    {"buyers",
     "TRANSFORM buyers FROM orders o JOIN customers c ON o.buyer_id = c.id " <>
       "SELECT c.name AS buyer, c.tier, o.amount WHERE c.tier <> 3",
     "SELECT o.id, c.name, c.tier, o.amount FROM orders o JOIN customers c ON o.buyer_id = c.id " <>
       "WHERE c.tier <> 3"},
    {"parties",
     "TRANSFORM parties FROM orders o LEFT JOIN customers b ON o.buyer_id = b.id " <>
       "LEFT JOIN customers s ON o.seller_id = s.id " <>
       "SELECT b.name AS buyer, s.name AS seller, s.tier AS seller_tier",
     "SELECT o.id, b.name, s.name, s.tier FROM orders o " <>
       "LEFT JOIN customers b ON o.buyer_id = b.id LEFT JOIN customers s ON o.seller_id = s.id"}
  ]

  setup do
    seed = String.to_integer(System.get_env("TRELLIS_SEED") || "#{:rand.uniform(1_000_000)}")
    IO.puts("joined partitioned seed #{seed} (replay with TRELLIS_SEED=#{seed})")
    %{url: url, pg: pg} = Database.open!("joined_partitions")
    PartitionedJoinWorkload.create_tables!(pg)
    %{url: url, pg: pg, seed: seed}
  end

  test "writes through the parent and to a partition by name, an attach and a detach, " <>
         "each followed",
       %{url: url, pg: pg} do
    :ok = Trellis.migrate(Handles.connect!(url))
    trellis = Handles.connect!(url, staging: true, drain_threads: 2, timeout_ms: 30_000)
    define_all!(trellis, @transforms)
    assert_all_equal(trellis, pg, @transforms, "after the build")

    steps = [
      {"a rename through the parent", fn -> "UPDATE customers SET name = 'x' WHERE id = 10" end},
      {"a rename naming the partition",
       fn -> "UPDATE customers_c SET name = 'y', tier = 0 WHERE id BETWEEN 100 AND 120" end},
      {"a delete naming the partition", fn -> "DELETE FROM customers_a WHERE id = 11" end},
      {"an insert naming the partition",
       fn -> "INSERT INTO customers_a VALUES (11, 'eleven', 1)" end},
      {"a row moved to another partition",
       fn ->
         "DELETE FROM customers_c WHERE id = 140; UPDATE customers SET id = 140 WHERE id = 12"
       end},
      {"a partition attached", fn -> PartitionedJoinWorkload.attach!(pg) && nil end},
      {"a write to the attached partition by name",
       fn -> "UPDATE customers_d SET name = 'dee' WHERE id % 5 = 0" end},
      {"a partition detached", fn -> PartitionedJoinWorkload.detach!(pg) && nil end},
      {"a write to the detached table", fn -> "UPDATE customers_b SET name = 'gone'" end},
      {"a partition created for the detached range, with a row",
       fn ->
         "CREATE TABLE customers_e PARTITION OF customers FOR VALUES FROM (50) TO (100); " <>
           "INSERT INTO customers VALUES (60, 'sixty', 2)"
       end},
      # Written in the detach's own transaction, so before any staging round
      # can see the detach: the rows the detached table holds afterwards are
      # not the rows it held at the detach (logical capture does not see
      # writes to it once detached).
      {"a partition detached, then rows deleted from it and renamed, in one transaction",
       fn ->
         "BEGIN; ALTER TABLE customers DETACH PARTITION customers_c; " <>
           "DELETE FROM customers_c WHERE id BETWEEN 100 AND 130; " <>
           "UPDATE customers_c SET id = id + 1000 WHERE id > 140; COMMIT"
       end}
    ]

    for {what, step} <- steps do
      if sql = step.(), do: SimplePG.query!(pg, sql)
      assert_all_equal(trellis, pg, @transforms, what)
    end

    # The steps were seen: the attached partition's rows are joined, the
    # detached one's are not.
    assert SimplePG.scalar!(pg, "SELECT count(*) > 0 FROM buyers WHERE buyer = 'dee'") == "t"
    assert SimplePG.scalar!(pg, "SELECT count(*) FROM parties WHERE buyer = 'gone'") == "0"
  end

  test "4 writers over both tables, a partition attached and one detached while they write, " <>
         "5000 writes, a fleet of two handles",
       %{url: url, pg: pg, seed: seed} do
    {a, b} = Handles.fleet!(url, [staging: true, drain_threads: 2], drain_threads: 2)
    define_all!(a, @transforms)
    assert_all_equal(a, pg, @transforms, "after the build, seed #{seed}")

    # 4 writers x 1,250 statements = 5,000 operations; the partition
    # changes happen while they write (checked by the count).
    {committed, at_detach} =
      Writers.with_changes(
        url,
        4,
        fn w, counter -> PartitionedJoinWorkload.run(url, w, seed, 1_250, counter) end,
        [{1_000, &PartitionedJoinWorkload.attach!/1}, {2_500, &PartitionedJoinWorkload.detach!/1}]
      )

    assert at_detach < 4_500, "the writers finished before the partition changes"
    assert committed > 3_500, "only #{committed} of 5000 writes committed"

    assert_all_equal(b, pg, @transforms, "seed #{seed}; rerun with TRELLIS_SEED=#{seed}")

    for {name, _statement, _query} <- @transforms do
      assert {:ok, %Trellis.Status{status: :live, correcting: []}} = Trellis.status(b, name)
    end

    Trellis.shutdown(a)
    Trellis.shutdown(b)
  end
end
