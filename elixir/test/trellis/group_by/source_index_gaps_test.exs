defmodule Trellis.GroupBy.SourceIndexGapsTest do
  # status/2 reports the source index a GROUP BY transform's maintenance
  # needs and lacks, with the CREATE INDEX that closes it; the gap goes away
  # once that index exists (no restart), a transform defined WITHOUT SOURCE
  # INDEX lists it as opted out, and a gap never stops maintenance.
  use ExUnit.Case, async: true

  alias Trellis.Test.{Database, SimplePG}
  import Trellis.Test.Targets

  @moduletag :port
  @moduletag timeout: 120_000

  setup do
    %{url: url, pg: pg} = Database.open!("group_gaps")

    SimplePG.query!(pg, """
    CREATE TABLE orders (id int PRIMARY KEY, customer_id int, "Region" text, placed_at timestamp,
                         amount int);
    INSERT INTO orders SELECT g, g % 10, 'r' || g % 3, timestamp '2026-01-01' + g * interval '1 h', g
    FROM generate_series(1, 500) g;
    """)

    :ok = Trellis.migrate(Trellis.connect!(url: url))
    trellis = Trellis.connect!(url: url, staging: true, drain_threads: 1)
    %{trellis: trellis, pg: pg}
  end

  defp gaps(trellis, name) do
    {:ok, status} = Trellis.status(trellis, name)
    status.source_index_gaps
  end

  test "a gap shows its fix, stays out of the way, and goes when the fix runs",
       %{trellis: trellis, pg: pg} do
    {:ok, _} =
      Trellis.define(
        trellis,
        "TRANSFORM by_customer FROM orders o SELECT o.customer_id, \"Region\", sum(amount) AS s " <>
          "GROUP BY o.customer_id, \"Region\""
      )

    assert [
             %Trellis.SourceIndexGap{
               table: "public.orders",
               columns: [~s("customer_id"), ~s("Region")],
               role: :group_by,
               opted_out: false,
               fix: fix
             }
           ] = gaps(trellis, "by_customer")

    assert fix == ~s{CREATE INDEX CONCURRENTLY ON "public"."orders" ("customer_id", "Region")}

    # Maintenance runs all the same.
    SimplePG.query!(pg, "UPDATE orders SET amount = amount + 1 WHERE id < 50")
    converge!(trellis)

    assert differences(
             pg,
             ~s(SELECT customer_id, "Region", s FROM by_customer),
             ~s{SELECT customer_id, "Region", sum(amount) FROM orders GROUP BY 1, 2}
           ) == "0"

    SimplePG.query!(pg, fix)
    assert gaps(trellis, "by_customer") == []
  end

  test "an index whose leading columns are the group columns closes it; so does an " <>
         "expression index on the grouped expression",
       %{trellis: trellis, pg: pg} do
    {:ok, _} =
      Trellis.define(
        trellis,
        "TRANSFORM per_customer FROM orders SELECT customer_id, count(*) AS n GROUP BY customer_id"
      )

    {:ok, _} =
      Trellis.define(
        trellis,
        "TRANSFORM per_day FROM orders SELECT date_trunc('day', placed_at) AS day, " <>
          "count(*) AS n GROUP BY date_trunc('day', placed_at)"
      )

    assert [%{columns: [~s("customer_id")]}] = gaps(trellis, "per_customer")
    assert [%{columns: ["(date_trunc('day', placed_at))"], fix: fix}] = gaps(trellis, "per_day")

    SimplePG.query!(pg, "CREATE INDEX wide ON orders (customer_id, amount)")
    assert gaps(trellis, "per_customer") == []

    SimplePG.query!(pg, fix)
    assert gaps(trellis, "per_day") == []
  end

  test "WITHOUT SOURCE INDEX runs and lists the gap as opted out", %{trellis: trellis, pg: pg} do
    {:ok, _} =
      Trellis.define(
        trellis,
        "TRANSFORM accepted FROM orders SELECT customer_id, max(amount) AS top " <>
          "GROUP BY customer_id WITHOUT SOURCE INDEX"
      )

    assert [%Trellis.SourceIndexGap{opted_out: true, role: :group_by}] = gaps(trellis, "accepted")

    SimplePG.query!(pg, "DELETE FROM orders WHERE amount > 400")
    converge!(trellis)

    assert differences(
             pg,
             "SELECT customer_id, top FROM accepted",
             "SELECT customer_id, max(amount) FROM orders GROUP BY 1"
           ) == "0"
  end

  test "projections and aggregates over the whole table have no gap", %{trellis: trellis} do
    {:ok, _} = Trellis.define(trellis, "TRANSFORM total FROM orders SELECT sum(amount) AS s")
    {:ok, _} = Trellis.define(trellis, "TRANSFORM copy FROM orders SELECT amount")
    assert gaps(trellis, "total") == []
    assert gaps(trellis, "copy") == []
  end
end
