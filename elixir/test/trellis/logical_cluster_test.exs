defmodule Trellis.LogicalClusterTest do
  # The test support's cluster with wal_level = logical (issue 28's capture by
  # logical decoding needs one), and the engine on it through the real port:
  # trigger capture keeps every write there as it does on any cluster.
  use ExUnit.Case, async: true

  alias Trellis.Test.{Database, SimplePG}

  @moduletag :port
  @moduletag :capture_log
  @moduletag timeout: 180_000

  test "a database asked for with wal_level: :logical is on a logical cluster" do
    %{pg: pg} = Database.open!("logical", wal_level: :logical)
    assert SimplePG.scalar!(pg, "SHOW wal_level") == "logical"
    assert String.to_integer(SimplePG.scalar!(pg, "SHOW max_replication_slots")) >= 10

    # The suite's own cluster is left as the run asked for it.
    %{pg: plain} = Database.open!("plain")

    expected = if System.get_env("TRELLIS_TESTKIT_LOGICAL") == "1", do: "logical", else: "replica"

    assert SimplePG.scalar!(plain, "SHOW wal_level") == expected
  end

  test "an unknown wal_level is an ArgumentError naming it" do
    assert_raise ArgumentError, ~r/wal_level: expected :replica or :logical, got :minimal/, fn ->
      Database.create!("bad", wal_level: :minimal)
    end
  end

  test "a transform on the logical cluster converges on every write" do
    %{url: url, pg: pg} = Database.open!("logical_engine", wal_level: :logical)

    SimplePG.query!(pg, """
    CREATE TABLE widgets (id int PRIMARY KEY, price numeric);
    INSERT INTO widgets SELECT g, g FROM generate_series(1, 100) g;
    """)

    migrator = Trellis.connect!(url: url)
    :ok = Trellis.migrate(migrator)
    :ok = Trellis.shutdown(migrator)
    trellis = Trellis.connect!(url: url, staging: true, drain_threads: 1)

    {:transform_defined, _} =
      Trellis.define!(trellis, "TRANSFORM prices FROM widgets SELECT price AS price")

    SimplePG.query!(pg, """
    UPDATE widgets SET price = price * 2 WHERE id <= 30;
    DELETE FROM widgets WHERE id > 90;
    INSERT INTO widgets VALUES (500, 5);
    """)

    :ok = Trellis.await_converged(trellis, Trellis.watermark_token!(trellis))

    assert SimplePG.scalar!(pg, """
           SELECT count(*) FROM ((TABLE prices EXCEPT SELECT id, price FROM widgets)
                                 UNION ALL (SELECT id, price FROM widgets EXCEPT TABLE prices)) d
           """) == "0"
  end
end
