defmodule Trellis.Engine.CapturePrivilegesTest do
  # The privilege model through the real port (spec/engine.md "Capture"):
  # Trellis runs as the role that owns the schema, the app writes through a
  # role with DML rights on its table and none on the catalog. Its writes
  # keep working after a define and reach the target.
  use ExUnit.Case, async: true

  alias Trellis.Test.{Database, SimplePG}

  @moduletag :port
  @moduletag timeout: 120_000

  setup do
    url = Database.create!("privileges")
    # Roles are cluster-wide: unique names keep concurrent tests apart.
    n = System.unique_integer([:positive])
    owner = "app_owner_#{n}"
    writer = "app_writer_#{n}"
    pg = SimplePG.connect!(url)
    db = SimplePG.scalar!(pg, "SELECT quote_ident(current_database())")

    SimplePG.query!(pg, """
    CREATE ROLE #{owner} LOGIN;
    CREATE ROLE #{writer} LOGIN;
    GRANT CREATE ON DATABASE #{db} TO #{owner};
    GRANT CREATE ON SCHEMA public TO #{owner};
    SET ROLE #{owner};
    CREATE TABLE accounts (id int PRIMARY KEY, balance int);
    INSERT INTO accounts SELECT g, g FROM generate_series(1, 20) g;
    GRANT SELECT, INSERT, UPDATE, DELETE ON accounts TO #{writer};
    RESET ROLE;
    """)

    on_exit(fn ->
      admin = SimplePG.connect!(url)
      SimplePG.query(admin, "DROP OWNED BY #{owner}, #{writer} CASCADE")
      SimplePG.query(admin, "DROP ROLE #{owner}")
      SimplePG.query(admin, "DROP ROLE #{writer}")
      SimplePG.close(admin)
      SimplePG.close(pg)
    end)

    %{url: url, pg: pg, owner_url: as_role(url, owner), writer_url: as_role(url, writer)}
  end

  defp as_role(url, role), do: URI.to_string(%{URI.parse(url) | userinfo: role})

  test "a DML-only writer keeps writing a source after a define", ctx do
    # As a deploy does it: migrate first, then start the workers.
    migrator = Trellis.connect!(url: ctx.owner_url)
    :ok = Trellis.migrate(migrator)
    :ok = Trellis.shutdown(migrator)
    trellis = Trellis.connect!(url: ctx.owner_url, staging: true, drain_threads: 1)

    {:ok, {:transform_defined, _}} =
      Trellis.define(trellis, "TRANSFORM balances FROM accounts SELECT balance AS balance")

    writer = SimplePG.connect!(ctx.writer_url)
    assert {:error, _} = SimplePG.query(writer, "SELECT count(*) FROM trellis.capture")
    assert {:ok, _} = SimplePG.query(writer, "UPDATE accounts SET balance = 0 WHERE id <= 5")
    assert {:ok, _} = SimplePG.query(writer, "INSERT INTO accounts VALUES (100, 7)")
    assert {:ok, _} = SimplePG.query(writer, "DELETE FROM accounts WHERE id = 20")
    SimplePG.close(writer)

    :ok = Trellis.await_converged(trellis, Trellis.watermark_token!(trellis), timeout_ms: 30_000)

    assert SimplePG.scalar!(ctx.pg, """
           SELECT count(*) FROM ((TABLE balances EXCEPT ALL SELECT id, balance FROM accounts)
             UNION ALL (SELECT id, balance FROM accounts EXCEPT ALL TABLE balances)) d
           """) == "0"

    :ok = Trellis.shutdown(trellis)
  end
end
