defmodule Trellis.Hardening.ScarceConnectionsTest do
  # Issue 17 item 6: with the role's connection slots nearly full, a handle
  # serves every call on the sessions it has; a pool thread that cannot open
  # a session does not take calls, and the pool grows once it can.
  use ExUnit.Case, async: true

  alias Trellis.Test.{Database, SimplePG}

  @moduletag :port
  @moduletag timeout: 120_000

  setup do
    %{role: role, owner_url: role_url} = Database.create_with_owner!("scarce")
    admin = SimplePG.connect!(Trellis.TestCluster.url())

    migrator = Trellis.connect!(url: role_url)
    :ok = Trellis.migrate(migrator)
    Trellis.shutdown(migrator)

    # The handle's first session takes the role's only slot.
    SimplePG.query!(admin, "ALTER ROLE #{role} CONNECTION LIMIT 1")
    on_exit(fn -> SimplePG.close(admin) end)
    %{admin: admin, role: role, url: role_url}
  end

  defp sessions(admin, role) do
    admin
    |> SimplePG.scalar!("SELECT count(*) FROM pg_stat_activity WHERE usename = '#{role}'")
    |> String.to_integer()
  end

  # Four callers at once, each taking a token and waiting for it.
  defp converge_concurrently(trellis) do
    1..4
    |> Task.async_stream(
      fn _ ->
        with {:ok, token} <- Trellis.watermark_token(trellis) do
          Trellis.await_converged(trellis, token, timeout_ms: 5_000)
        end
      end,
      max_concurrency: 4,
      timeout: 30_000
    )
    |> Enum.map(fn {:ok, result} -> result end)
  end

  test "every call is served by the one session the role has room for, and the pool grows later",
       %{admin: admin, role: role, url: url} do
    trellis = Trellis.Test.Handles.connect!(url, pool_size: 4)
    assert sessions(admin, role) == 1

    for _ <- 1..10 do
      assert converge_concurrently(trellis) == [:ok, :ok, :ok, :ok]
    end

    assert sessions(admin, role) == 1

    # Room for more: the pool grows after its backoff (1 s, doubling).
    SimplePG.query!(admin, "ALTER ROLE #{role} CONNECTION LIMIT 4")

    grown =
      Enum.reduce_while(1..80, false, fn _, _ ->
        assert Enum.all?(converge_concurrently(trellis), &(&1 == :ok))

        if sessions(admin, role) > 1,
          do: {:halt, true},
          else: Process.sleep(250) && {:cont, false}
      end)

    assert grown
  end
end
