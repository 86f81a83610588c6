defmodule Trellis.Hardening.SessionSettingsTest do
  # Issue 17 item 9: every engine session pins the settings the grammar and
  # the engine's SQL assume, whatever the role and the database set
  # (spec/engine.md, "Session settings").
  use ExUnit.Case, async: true

  alias Trellis.Test.{Database, SimplePG}

  @moduletag :port
  @moduletag timeout: 120_000

  setup do
    %{role: role, database: database, url: url, owner_url: owner_url} =
      Database.create_with_owner!("settings")

    pg = SimplePG.connect!(url)

    SimplePG.query!(pg, """
    CREATE TABLE widgets (id int PRIMARY KEY, s text, d date, f float8);
    INSERT INTO widgets VALUES
      (1, E'a\\\\', '2024-02-03', 0.1), (2, 'b', '2024-12-31', 1e-300), (3, E'c\\\\d', NULL, 2.5);
    ALTER TABLE widgets OWNER TO #{role};
    CREATE SCHEMA evil AUTHORIZATION #{role};
    CREATE FUNCTION evil.now() RETURNS timestamptz LANGUAGE plpgsql
      AS $$BEGIN RAISE EXCEPTION 'evil.now() ran'; END$$;
    CREATE FUNCTION evil.upper(text) RETURNS text LANGUAGE sql AS $$SELECT 'evil'$$;
    ALTER DATABASE #{database} SET standard_conforming_strings = off;
    ALTER DATABASE #{database} SET DateStyle = 'SQL, DMY';
    ALTER ROLE #{role} SET standard_conforming_strings = off;
    ALTER ROLE #{role} SET search_path = public, evil, pg_catalog;
    ALTER ROLE #{role} SET IntervalStyle = sql_standard;
    ALTER ROLE #{role} SET extra_float_digits = -15;
    ALTER ROLE #{role} SET default_transaction_isolation = serializable;
    ALTER ROLE #{role} SET statement_timeout = 1;
    """)

    %{url: owner_url, pg: pg}
  end

  test "a transform with a trailing backslash in a string works under hostile role and database settings",
       %{url: url, pg: pg} do
    :ok = Trellis.migrate(Trellis.Test.Handles.connect!(url))

    trellis =
      Trellis.Test.Handles.connect!(url, staging: true, drain_threads: 1, timeout_ms: 30_000)

    assert {:ok, {:transform_defined, "t"}} =
             Trellis.define(
               trellis,
               ~S"TRANSFORM t FROM widgets SELECT s AS s, upper(s) AS u, d AS d, f AS f WHERE s <> 'a\'"
             )

    SimplePG.query!(pg, "INSERT INTO widgets VALUES (4, 'x', '2025-01-02', 0.30000000000000004)")
    :ok = Trellis.await_converged(trellis, Trellis.watermark_token!(trellis), timeout_ms: 30_000)

    # Read with the server's defaults, not the role's.
    rows = SimplePG.query!(pg, "SELECT s, u, d::text, f::text FROM t ORDER BY s")

    assert rows == [
             ["b", "B", "2024-12-31", "1e-300"],
             [~S"c\d", ~S"C\D", nil, "2.5"],
             ["x", "X", "2025-01-02", "0.30000000000000004"]
           ]
  end
end
