defmodule Trellis.Engine.TargetPrivilegesTest do
  # Who can read what Trellis writes, through the real port (spec/engine.md
  # "Who can read a target"): GRANT SELECT TO gives a read-only role the
  # target, through rebuilds and ALTERs; a source with row-level security
  # refuses a define unless it says WITHOUT ROW SECURITY, and security
  # enabled later shows in status and the log. The dump and load round trip
  # is test/engine/target_privileges_test.cc's (pg_dump --no-acl and psql)
  # and scripts/test-ecto.sh's (mix ecto.dump and ecto.load).
  use ExUnit.Case, async: true

  import ExUnit.CaptureLog

  alias Trellis.Test.{Database, SimplePG}

  @moduletag :port
  @moduletag timeout: 120_000

  setup do
    url = Database.create!("target_privileges")
    # Roles are cluster-wide: unique names keep concurrent tests apart.
    n = System.unique_integer([:positive])
    owner = "tp_owner_#{n}"
    reader = "tp_reader_#{n}"
    stranger = "tp_stranger_#{n}"
    pg = SimplePG.connect!(url)
    db = SimplePG.scalar!(pg, "SELECT quote_ident(current_database())")

    SimplePG.query!(pg, """
    CREATE ROLE #{owner} LOGIN;
    CREATE ROLE #{reader} LOGIN;
    CREATE ROLE #{stranger} LOGIN;
    GRANT CREATE ON DATABASE #{db} TO #{owner};
    GRANT CREATE ON SCHEMA public TO #{owner};
    SET ROLE #{owner};
    CREATE TABLE accounts (id int PRIMARY KEY, balance int);
    INSERT INTO accounts SELECT g, g FROM generate_series(1, 20) g;
    RESET ROLE;
    """)

    on_exit(fn ->
      admin = SimplePG.connect!(url)

      for role <- [owner, reader, stranger] do
        SimplePG.query(admin, "DROP OWNED BY #{role} CASCADE")
        SimplePG.query(admin, "DROP ROLE #{role}")
      end

      SimplePG.close(admin)
      SimplePG.close(pg)
    end)

    migrator = Trellis.connect!(url: as_role(url, owner))
    :ok = Trellis.migrate(migrator)
    :ok = Trellis.shutdown(migrator)
    trellis = Trellis.connect!(url: as_role(url, owner), staging: true, drain_threads: 1)
    on_exit(fn -> Trellis.shutdown(trellis) end)

    %{pg: pg, trellis: trellis, owner: owner, reader: reader, stranger: stranger}
  end

  defp as_role(url, role), do: URI.to_string(%{URI.parse(url) | userinfo: role})

  # `sql` as `role` on the admin connection: the value, or PostgreSQL's error.
  defp scalar_as(pg, role, sql) do
    SimplePG.query!(pg, "SET ROLE #{role}")

    try do
      case SimplePG.query(pg, sql) do
        {:ok, _} -> {:ok, SimplePG.scalar!(pg, sql)}
        {:error, error} -> {:error, error}
      end
    after
      SimplePG.query!(pg, "RESET ROLE")
    end
  end

  defp converge(trellis) do
    :ok = Trellis.await_converged(trellis, Trellis.watermark_token!(trellis), timeout_ms: 30_000)
  end

  test "the GRANT SELECT TO role reads the target after define, rebuild and ALTER; others cannot",
       ctx do
    %{pg: pg, trellis: trellis, reader: reader, stranger: stranger} = ctx

    assert {:ok, {:transform_defined, "balances"}} =
             Trellis.define(
               trellis,
               "TRANSFORM balances FROM accounts SELECT balance AS balance GRANT SELECT TO #{reader}"
             )

    assert [%Trellis.Definition{statement: statement}] = Trellis.definitions!(trellis)
    assert statement =~ ~r/ GRANT SELECT TO #{reader}\z/
    converge(trellis)
    assert scalar_as(pg, reader, "SELECT sum(balance) FROM balances") == {:ok, "210"}
    assert {:error, denied} = scalar_as(pg, stranger, "SELECT count(*) FROM balances")
    assert inspect(denied) =~ "permission denied for table balances"

    :ok = Trellis.request_backfill(trellis, "balances")
    converge(trellis)
    assert scalar_as(pg, reader, "SELECT sum(balance) FROM balances") == {:ok, "210"}

    {:ok, _} = Trellis.apply(trellis, "ALTER TRANSFORM balances ADD COLUMN balance * 2 AS twice")
    converge(trellis)
    assert scalar_as(pg, reader, "SELECT sum(twice) FROM balances") == {:ok, "420"}
    assert {:error, _} = scalar_as(pg, stranger, "SELECT sum(twice) FROM balances")
  end

  test "GRANT SELECT TO an unknown role is :not_found and creates nothing", %{trellis: trellis} do
    assert {:error, %Trellis.Error{code: :not_found, message: message}} =
             Trellis.define(
               trellis,
               "TRANSFORM balances FROM accounts SELECT balance AS balance GRANT SELECT TO nobody_here"
             )

    assert message =~ "role nobody_here does not exist"
    assert message =~ "leave it out of GRANT SELECT TO"
    assert Trellis.definitions!(trellis) == []
  end

  @tag :capture_log
  test "row-level security refuses a define unless WITHOUT ROW SECURITY; enabled later, it is reported",
       ctx do
    %{pg: pg, trellis: trellis, owner: owner} = ctx
    SimplePG.query!(pg, "ALTER TABLE accounts ENABLE ROW LEVEL SECURITY")

    assert {:error, %Trellis.Error{code: :validation, message: message}} =
             Trellis.define(trellis, "TRANSFORM balances FROM accounts SELECT balance AS balance")

    assert message =~ "table public.accounts has row-level security enabled"
    assert message =~ "add WITHOUT ROW SECURITY to the TRANSFORM"
    assert Trellis.definitions!(trellis) == []

    assert {:ok, {:transform_defined, "accepted"}} =
             Trellis.define(
               trellis,
               "TRANSFORM accepted FROM accounts SELECT balance AS balance WITHOUT ROW SECURITY"
             )

    SimplePG.query!(pg, "ALTER TABLE accounts DISABLE ROW LEVEL SECURITY")

    assert {:ok, {:transform_defined, "balances"}} =
             Trellis.define(trellis, "TRANSFORM balances FROM accounts SELECT balance AS balance")

    converge(trellis)

    log =
      capture_log(fn ->
        SimplePG.query!(pg, "SET ROLE #{owner}; ALTER TABLE accounts ENABLE ROW LEVEL SECURITY")
        SimplePG.query!(pg, "RESET ROLE")

        assert %Trellis.Status{row_security_tables: ["public.accounts"], status: :live} =
                 Trellis.status!(trellis, "balances")

        assert %Trellis.Status{row_security_tables: []} = Trellis.status!(trellis, "accepted")

        # The staging worker's capture check runs about once a second.
        Process.sleep(3_000)
      end)

    assert log =~ "row-level security is enabled on public.accounts (read by balances)"
    refute log =~ "(read by accepted)"
  end
end
