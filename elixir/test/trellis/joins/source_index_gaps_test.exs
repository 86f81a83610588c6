defmodule Trellis.Joins.SourceIndexGapsTest do
  # status/2 reports, for a join, the indexes its maintenance needs and
  # lacks: :join_from (the table a joined table is joined to, by that side's
  # join columns: which rows a joined row's change reaches) and :join_joined
  # (the joined table by its join columns), each with the CREATE INDEX that
  # closes it; a gap closes once the index exists, WITHOUT SOURCE INDEX lists
  # gaps as opted out, and a gap never stops maintenance.
  use ExUnit.Case, async: true

  alias Trellis.Test.{Database, SimplePG}
  import Trellis.Test.Targets

  @moduletag :port
  @moduletag timeout: 120_000

  @statement "TRANSFORM order_rows FROM orders o JOIN customers c ON o.customer_id = c.id " <>
               "LEFT JOIN regions r ON r.code = c.region_code SELECT c.name, r.label"
  @query "SELECT o.id, c.name, r.label FROM orders o JOIN customers c ON o.customer_id = c.id " <>
           "LEFT JOIN regions r ON r.code = c.region_code"

  setup do
    %{url: url, pg: pg} = Database.open!("join_gaps")

    SimplePG.query!(pg, """
    CREATE TABLE regions (id int PRIMARY KEY, code text, label text);
    CREATE UNIQUE INDEX regions_code ON regions (code);
    CREATE TABLE customers (id int PRIMARY KEY, name text, region_code text);
    CREATE TABLE orders (id int PRIMARY KEY, customer_id int, amount int);
    INSERT INTO regions VALUES (1, 'n', 'north'), (2, 's', 'south');
    INSERT INTO customers SELECT g, 'c' || g, CASE WHEN g % 2 = 0 THEN 'n' ELSE 's' END
    FROM generate_series(1, 50) g;
    INSERT INTO orders SELECT g, 1 + g % 50, g FROM generate_series(1, 500) g;
    """)

    :ok = Trellis.migrate(Trellis.connect!(url: url))
    trellis = Trellis.connect!(url: url, staging: true, drain_threads: 1)
    %{trellis: trellis, pg: pg}
  end

  defp gaps(trellis, name) do
    {:ok, status} = Trellis.status(trellis, name)
    Enum.sort_by(status.source_index_gaps, &{&1.role, &1.table})
  end

  test ":join_from gaps show their fixes, stay out of the way, and close", %{trellis: t, pg: pg} do
    {:ok, _} = Trellis.define(t, @statement)

    assert [
             %Trellis.SourceIndexGap{
               table: "public.customers",
               columns: [~s("region_code")],
               role: :join_from,
               opted_out: false,
               fix: customers_fix
             },
             %Trellis.SourceIndexGap{
               table: "public.orders",
               columns: [~s("customer_id")],
               role: :join_from,
               fix: orders_fix
             }
           ] = gaps(t, "order_rows")

    assert customers_fix ==
             ~s{CREATE INDEX CONCURRENTLY ON "public"."customers" ("region_code")}

    assert orders_fix == ~s{CREATE INDEX CONCURRENTLY ON "public"."orders" ("customer_id")}

    # Maintenance runs all the same.
    SimplePG.query!(pg, "UPDATE regions SET label = 'North' WHERE code = 'n'")
    SimplePG.query!(pg, "UPDATE customers SET name = 'renamed' WHERE id = 7")
    converge!(t)
    assert differences(pg, "TABLE order_rows", @query) == "0"

    SimplePG.query!(pg, orders_fix)
    assert [%Trellis.SourceIndexGap{table: "public.customers"}] = gaps(t, "order_rows")
    SimplePG.query!(pg, customers_fix)
    assert [] = gaps(t, "order_rows")
  end

  test "a :join_joined gap opens when the joined side's unique index is dropped",
       %{trellis: t, pg: pg} do
    SimplePG.query!(pg, """
    CREATE INDEX ON orders (customer_id);
    CREATE INDEX ON customers (region_code);
    """)

    {:ok, _} = Trellis.define(t, @statement)
    assert [] = gaps(t, "order_rows")
    SimplePG.query!(pg, "DROP INDEX regions_code")

    assert [
             %Trellis.SourceIndexGap{
               table: "public.regions",
               columns: [~s("code")],
               role: :join_joined,
               fix: ~s{CREATE INDEX CONCURRENTLY ON "public"."regions" ("code")}
             }
           ] = gaps(t, "order_rows")

    SimplePG.query!(pg, "CREATE UNIQUE INDEX ON regions (code)")
    assert [] = gaps(t, "order_rows")
  end

  test "WITHOUT SOURCE INDEX lists the gaps as opted out", %{trellis: t} do
    {:ok, _} = Trellis.define(t, @statement <> " WITHOUT SOURCE INDEX")
    gaps = gaps(t, "order_rows")
    assert length(gaps) == 2
    assert Enum.all?(gaps, & &1.opted_out)
  end
end
