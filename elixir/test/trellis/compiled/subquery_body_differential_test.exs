defmodule Trellis.Compiled.SubqueryBodyDifferentialTest do
  # Randomized differential tests of subqueries that read a query of their
  # own (spec/grammar.md section 11, "A subquery with a query of its own"):
  # a join inside the subquery (INNER and LEFT, correlated through a joined
  # table, compared to min and to a count), and subqueries inside a
  # subquery (IN holding an IN and a correlated comparison, as TPC-H Q20;
  # EXISTS holding NOT EXISTS). The writers of JoinWorkload run on every
  # table at once: NULL amounts, customer ids, region ids, emails and
  # contacts; rows moving between customers and regions, keys changing,
  # rows inserted and deleted, so rows gain and lose matches at each level.
  # After await_converged each target equals a fresh run of the user's SQL.
  # Seeded: replay with TRELLIS_SEED=<n>.
  use ExUnit.Case, async: false

  alias Trellis.Test.{CompiledRounds, JoinWorkload, SimplePG}
  import Trellis.Test.Targets

  @moduletag :port
  @moduletag timeout: 600_000

  # name, definition, the target's columns compared, the query they equal.
  @transforms [
    {"joined_contacts",
     "TRANSFORM joined_contacts FROM customers c SELECT c.id, c.name " <>
       "WHERE EXISTS (SELECT 1 FROM orders o JOIN customers k ON o.customer_id = k.id " <>
       "WHERE o.contact = c.email AND k.region_id < 5)", "id, name",
     "SELECT id, name FROM customers c WHERE EXISTS (SELECT 1 FROM orders o " <>
       "JOIN customers k ON o.customer_id = k.id WHERE o.contact = c.email AND k.region_id < 5)"},
    {"cheapest_in_region",
     "TRANSFORM cheapest_in_region FROM orders o JOIN customers c ON o.customer_id = c.id " <>
       "SELECT o.id, o.amount WHERE o.amount = (SELECT min(x.amount) FROM orders x " <>
       "JOIN customers y ON x.customer_id = y.id WHERE y.region_id = c.region_id)", "id, amount",
     "SELECT o.id, o.amount FROM orders o JOIN customers c ON o.customer_id = c.id " <>
       "WHERE o.amount = (SELECT min(x.amount) FROM orders x JOIN customers y " <>
       "ON x.customer_id = y.id WHERE y.region_id = c.region_id)"},
    {"buying_regions",
     "TRANSFORM buying_regions FROM regions r SELECT r.id, r.label " <>
       "WHERE r.id IN (SELECT c.region_id FROM orders o JOIN customers c " <>
       "ON o.customer_id = c.id WHERE o.amount > 120)", "id, label",
     "SELECT id, label FROM regions r WHERE r.id IN (SELECT c.region_id FROM orders o " <>
       "JOIN customers c ON o.customer_id = c.id WHERE o.amount > 120)"},
    {"unlisted_emails",
     "TRANSFORM unlisted_emails FROM customers c SELECT c.id, c.email " <>
       "WHERE c.email NOT IN (SELECT o.contact FROM orders o JOIN customers k " <>
       "ON o.customer_id = k.id WHERE k.region_id = 3)", "id, email",
     "SELECT id, email FROM customers c WHERE c.email NOT IN (SELECT o.contact FROM orders o " <>
       "JOIN customers k ON o.customer_id = k.id WHERE k.region_id = 3)"},
    {"few_known_contacts",
     "TRANSFORM few_known_contacts FROM customers c SELECT c.id " <>
       "WHERE (SELECT count(k.id) FROM orders o LEFT JOIN customers k ON o.contact = k.email " <>
       "WHERE o.customer_id = c.id) < 2", "id",
     "SELECT id FROM customers c WHERE (SELECT count(k.id) FROM orders o " <>
       "LEFT JOIN customers k ON o.contact = k.email WHERE o.customer_id = c.id) < 2"},
    {"steady_buyers",
     "TRANSFORM steady_buyers FROM customers c SELECT c.id, c.name " <>
       "WHERE c.id IN (SELECT o.customer_id FROM orders o WHERE o.contact IN " <>
       "(SELECT k.email FROM customers k WHERE k.region_id < 4) AND o.amount > " <>
       "(SELECT avg(x.amount) FROM orders x WHERE x.customer_id = o.customer_id))", "id, name",
     "SELECT id, name FROM customers c WHERE c.id IN (SELECT o.customer_id FROM orders o " <>
       "WHERE o.contact IN (SELECT k.email FROM customers k WHERE k.region_id < 4) " <>
       "AND o.amount > (SELECT avg(x.amount) FROM orders x WHERE x.customer_id = o.customer_id))"},
    {"regions_with_idle",
     "TRANSFORM regions_with_idle FROM regions r SELECT r.id, r.vat " <>
       "WHERE EXISTS (SELECT 1 FROM customers c WHERE c.region_id = r.id AND NOT EXISTS " <>
       "(SELECT 1 FROM orders o WHERE o.customer_id = c.id AND o.amount > 150))", "id, vat",
     "SELECT id, vat FROM regions r WHERE EXISTS (SELECT 1 FROM customers c " <>
       "WHERE c.region_id = r.id AND NOT EXISTS (SELECT 1 FROM orders o " <>
       "WHERE o.customer_id = c.id AND o.amount > 150))"}
  ]

  setup do: JoinWorkload.seeded_database!("subquery_body_differential", "subquery bodies")

  test "4 writers over every table, a fleet of two handles", %{url: url, pg: pg, seed: seed} do
    CompiledRounds.fleet_round!(url, pg, seed, @transforms,
      defined: fn a ->
        # Each shows the statement as written, and nothing of its stages.
        assert_shown_as_written!(a, @transforms)

        # The subquery's own query is a stage of the user's transform.
        owned =
          SimplePG.scalar!(pg, """
          SELECT count(*) FROM trellis.transforms s JOIN trellis.transforms u ON s.owner_id = u.id
          WHERE u.target_name = 'steady_buyers'
          """)

        assert String.to_integer(owned) >= 4
      end,
      live: fn a ->
        # PAUSE and DROP take every stage with it.
        for {name, _, _, _} <- @transforms do
          {:ok, _} = Trellis.apply(a, "PAUSE TRANSFORM #{name}")
          {:ok, _} = Trellis.apply(a, "DROP TRANSFORM #{name}")
        end

        assert SimplePG.scalar!(pg, "SELECT count(*) FROM trellis.transforms") == "0"
      end
    )
  end

  test "killing the port that stages while the stages drain loses and repeats nothing",
       %{url: url, pg: pg, seed: seed} do
    CompiledRounds.crash_round!(url, pg, seed, @transforms)
  end
end
