defmodule Trellis.Joins.JoinedTwiceTest do
  # One table joined several times in one definition (issue 12): an order's
  # buyer (customers by id), its seller (customers by the unique email) and
  # its buyer's referrer (customers reached from customers). The table is
  # one source with one capture, so a write to one customer row must reach
  # the rows that read it through any of its aliases. Deterministic writes
  # first, then a seeded randomized run (replay with TRELLIS_SEED=<n>).
  use ExUnit.Case, async: false

  alias Trellis.Test.{Database, Handles, SimplePG, TwiceJoinedWorkload}
  import Trellis.Test.Targets

  @moduletag :port
  @moduletag timeout: 600_000

  # name, definition, the query its target must equal
  @transforms [
    {"trades",
     "TRANSFORM trades FROM orders o JOIN customers AS buyer ON o.buyer_id = buyer.id " <>
       "LEFT JOIN customers AS seller ON o.seller_email = seller.email " <>
       "LEFT JOIN customers AS referrer ON buyer.referrer_id = referrer.id " <>
       "SELECT buyer.name AS buyer_name, seller.id AS seller_id, seller.name AS seller_name, " <>
       "referrer.name AS referrer_name, o.amount " <>
       "WHERE seller.id IS DISTINCT FROM buyer.id",
     "SELECT o.id, buyer.name, seller.id, seller.name, referrer.name, o.amount " <>
       "FROM orders o JOIN customers buyer ON o.buyer_id = buyer.id " <>
       "LEFT JOIN customers seller ON o.seller_email = seller.email " <>
       "LEFT JOIN customers referrer ON buyer.referrer_id = referrer.id " <>
       "WHERE seller.id IS DISTINCT FROM buyer.id"},
    {"sellers",
     "TRANSFORM sellers FROM orders o LEFT JOIN customers b ON b.id = o.buyer_id " <>
       "JOIN customers s ON s.email = o.seller_email " <>
       "SELECT b.email AS buyer_email, s.referrer_id AS seller_referrer, s.name AS seller",
     "SELECT o.id, b.email, s.referrer_id, s.name FROM orders o " <>
       "LEFT JOIN customers b ON b.id = o.buyer_id JOIN customers s ON s.email = o.seller_email"}
  ]

  setup do
    seed = String.to_integer(System.get_env("TRELLIS_SEED") || "#{:rand.uniform(1_000_000)}")
    IO.puts("joined twice seed #{seed} (replay with TRELLIS_SEED=#{seed})")
    %{url: url, pg: pg} = Database.open!("joined_twice")
    TwiceJoinedWorkload.create_tables!(pg)
    %{url: url, pg: pg, seed: seed}
  end

  test "a write to a customer reaches the orders that read it as buyer, seller or referrer",
       %{url: url, pg: pg} do
    :ok = Trellis.migrate(Handles.connect!(url))
    trellis = Handles.connect!(url, staging: true, drain_threads: 2, timeout_ms: 30_000)
    define_all!(trellis, @transforms)
    assert_all_equal(trellis, pg, @transforms, "after the build")

    # Customer 7 is the buyer of some orders, the seller of others (by its
    # email) and the referrer of customers 20, 33, ... (referrer_id 7).
    steps = [
      {"a rename", "UPDATE customers SET name = 'seven' WHERE id = 7"},
      {"an email change", "UPDATE customers SET email = 'seven@x' WHERE id = 7"},
      {"the email back", "UPDATE customers SET email = 'c7@x' WHERE id = 7"},
      {"a key change", "UPDATE customers SET id = 700 WHERE id = 7"},
      {"the key back", "UPDATE customers SET id = 7 WHERE id = 700"},
      {"a buyer becoming its own seller",
       "UPDATE orders SET seller_email = 'c' || buyer_id || '@x' WHERE id % 10 = 0"},
      {"a referrer change", "UPDATE customers SET referrer_id = 8 WHERE referrer_id = 7"},
      {"a delete", "DELETE FROM customers WHERE id = 8"},
      {"a re-insert", "INSERT INTO customers VALUES (8, 'eight again', 'c8@x', 7)"},
      {"renames of several customers in one statement",
       "UPDATE customers SET name = name || '!' WHERE id BETWEEN 5 AND 40"},
      {"two customers swapping emails in one transaction",
       "BEGIN; UPDATE customers SET email = 'swap' WHERE id = 3; " <>
         "UPDATE customers SET email = 'c3@x' WHERE id = 4; " <>
         "UPDATE customers SET email = 'c4@x' WHERE id = 3; COMMIT"},
      {"re-pointing orders",
       "UPDATE orders SET buyer_id = 9, seller_email = 'c7@x' WHERE id BETWEEN 1 AND 30"},
      {"TRUNCATE of the joined table", "TRUNCATE customers"},
      {"customers back",
       "INSERT INTO customers SELECT g, 'back ' || g, 'c' || g || '@x', nullif(g % 7, 0) " <>
         "FROM generate_series(1, 60) g"}
    ]

    for {what, sql} <- steps do
      SimplePG.query!(pg, sql)
      assert_all_equal(trellis, pg, @transforms, what)
    end

    # Neither target is empty: the checks compared rows.
    assert SimplePG.scalar!(pg, "SELECT count(*) > 100 FROM trades") == "t"
    assert SimplePG.scalar!(pg, "SELECT count(*) > 100 FROM sellers") == "t"
  end

  test "4 writers over both sides, 5000 random writes, a fleet of two handles",
       %{url: url, pg: pg, seed: seed} do
    {a, b} = Handles.fleet!(url, [staging: true, drain_threads: 2], drain_threads: 2)
    define_all!(a, @transforms)
    assert_all_equal(a, pg, @transforms, "after the build, seed #{seed}")

    committed =
      1..4
      |> Enum.map(fn w -> Task.async(fn -> TwiceJoinedWorkload.run(url, w, seed, 1250) end) end)
      |> Task.await_many(480_000)
      |> Enum.sum()

    assert committed > 4_000, "only #{committed} of 5000 writes committed"
    assert_all_equal(b, pg, @transforms, "seed #{seed}; rerun with TRELLIS_SEED=#{seed}")

    for {name, _statement, _query} <- @transforms do
      assert {:ok, %Trellis.Status{status: :live, backlog_pages: 0}} = Trellis.status(b, name)
    end

    Trellis.shutdown(a)
    Trellis.shutdown(b)
  end
end
