defmodule Trellis.Compiled.DistinctDifferentialTest do
  # Randomized differential tests of DISTINCT aggregates, compiled into
  # stages (spec/engine.md "Compiled stages: DISTINCT aggregates"):
  # count/sum/avg(DISTINCT x) beside plain count, sum, avg and max, under
  # GROUP BY, over the whole table, with HAVING, in expressions, over a join
  # and with a subquery in WHERE. The writers of JoinWorkload put NULLs in
  # every compared column (customer ids, the group key; contacts and amounts,
  # the distinct arguments; region ids), move orders between customers and
  # customers between regions, and insert and delete rows, so groups appear,
  # empty, hold only NULL values and cross the HAVING both ways. After
  # await_converged each target equals a fresh run of the user's SQL.
  # Seeded: replay with TRELLIS_SEED=<n>.
  use ExUnit.Case, async: false

  alias Trellis.Test.{CompiledRounds, JoinWorkload, SimplePG}
  import Trellis.Test.Targets

  @moduletag :port
  @moduletag timeout: 600_000

  # name, definition, the target's columns compared, the query they equal.
  @transforms [
    {"contacts_per_customer",
     "TRANSFORM contacts_per_customer FROM orders o SELECT o.customer_id, " <>
       "count(DISTINCT o.contact) AS contacts, count(*) AS n, count(o.amount) AS counted, " <>
       "sum(o.amount) AS total, avg(o.amount) AS mean, max(o.amount) AS top " <>
       "GROUP BY o.customer_id", "customer_id, contacts, n, counted, total, mean, top",
     "SELECT customer_id, count(DISTINCT contact), count(*), count(amount), sum(amount), " <>
       "avg(amount), max(amount) FROM orders GROUP BY customer_id"},
    {"distinct_amounts",
     "TRANSFORM distinct_amounts FROM orders o SELECT o.customer_id, " <>
       "sum(DISTINCT o.amount) AS s, avg(DISTINCT o.amount) AS a, " <>
       "count(DISTINCT o.amount) AS c WHERE o.note <> 'n7' GROUP BY o.customer_id " <>
       "HAVING count(*) > 12", "customer_id, s, a, c",
     "SELECT customer_id, sum(DISTINCT amount), avg(DISTINCT amount), count(DISTINCT amount) " <>
       "FROM orders WHERE note <> 'n7' GROUP BY customer_id HAVING count(*) > 12"},
    {"order_reach",
     "TRANSFORM order_reach FROM orders o SELECT count(DISTINCT o.customer_id) AS buyers, " <>
       "count(*) AS n, sum(o.amount) AS total WHERE o.amount > 50", "buyers, n, total",
     "SELECT count(DISTINCT customer_id), count(*), sum(amount) FROM orders WHERE amount > 50"},
    {"region_reach",
     "TRANSFORM region_reach FROM orders o JOIN customers c ON o.customer_id = c.id " <>
       "SELECT c.region_id, count(DISTINCT o.contact) AS contacts, " <>
       "100 * count(DISTINCT o.contact) / count(*) AS per_hundred GROUP BY c.region_id",
     "region_id, contacts, per_hundred",
     "SELECT c.region_id, count(DISTINCT o.contact), 100 * count(DISTINCT o.contact) / count(*) " <>
       "FROM orders o JOIN customers c ON o.customer_id = c.id GROUP BY c.region_id"},
    {"regional_buyers",
     "TRANSFORM regional_buyers FROM customers c SELECT c.region_id, " <>
       "count(DISTINCT c.name) AS names, count(*) AS n WHERE EXISTS (SELECT 1 FROM orders o " <>
       "WHERE o.customer_id = c.id AND o.amount > 100) GROUP BY c.region_id",
     "region_id, names, n",
     "SELECT region_id, count(DISTINCT name), count(*) FROM customers c WHERE EXISTS " <>
       "(SELECT 1 FROM orders o WHERE o.customer_id = c.id AND o.amount > 100) " <>
       "GROUP BY region_id"}
  ]

  setup do: JoinWorkload.seeded_database!("distinct_differential", "DISTINCT differential")

  test "4 writers, NULLs in every compared column, a fleet of two handles",
       %{url: url, pg: pg, seed: seed} do
    CompiledRounds.fleet_round!(url, pg, seed, @transforms,
      defined: fn a ->
        # Each shows the statement as written, and no hidden name.
        {:ok, definitions} = Trellis.definitions(a)

        for {name, statement, _, _} <- @transforms do
          %Trellis.Definition{statement: shown} = Enum.find(definitions, &(&1.name == name))
          assert shown =~ "(DISTINCT ", "#{name} shows #{shown}"
          refute shown =~ "__trellis", "#{name} shows #{shown}"
          # From the first DISTINCT call on, the statement reads as written.
          [first | _] = Regex.run(~r/(count|sum|avg)\(DISTINCT .*$/, statement)
          assert String.ends_with?(shown, first), "#{name} shows #{shown}"
        end
      end,
      written: fn b ->
        # Groups of only NULL contacts exist, with 0 distinct contacts, as in SQL.
        SimplePG.query!(pg, "UPDATE orders SET contact = NULL WHERE customer_id = 5")
        assert_compiled_equal(b, pg, @transforms, seed)

        assert SimplePG.scalar!(
                 pg,
                 "SELECT contacts FROM contacts_per_customer WHERE customer_id = 5"
               ) in ["0", nil]
      end
    )
  end

  test "killing the port that stages while the stages drain loses and repeats nothing",
       %{url: url, pg: pg, seed: seed} do
    CompiledRounds.crash_round!(url, pg, seed, @transforms)
  end
end
