defmodule Trellis.Hardening.RestartTest do
  # Issue 17 item 1: after a PostgreSQL restart, no call fails because of a
  # pooled session that the server closed while it sat idle (libpq still says
  # CONNECTION_OK for it). Each test restarts a cluster of its own.
  use ExUnit.Case, async: true

  alias Trellis.Test.SimplePG
  alias Trellis.TestCluster

  @moduletag :port
  @moduletag timeout: 180_000

  setup do
    {:ok, testkit} = TestCluster.testkit_path()
    {holder, base} = TestCluster.start!(testkit)
    on_exit(fn -> Process.exit(holder, :kill) end)

    pg = SimplePG.connect!(base)

    SimplePG.query!(pg, """
    CREATE TABLE widgets (id int PRIMARY KEY, price numeric);
    INSERT INTO widgets SELECT g, g FROM generate_series(1, 10) g;
    """)

    SimplePG.close(pg)
    trellis = Trellis.connect!(url: base, pool_size: 8, timeout_ms: 30_000)
    :ok = Trellis.migrate(trellis)

    {:transform_defined, "w"} =
      Trellis.define!(trellis, "TRANSFORM w FROM widgets SELECT price AS p")

    on_exit(fn -> Trellis.shutdown(trellis) end)
    %{holder: holder, url: base, trellis: trellis}
  end

  # Six status calls at once, so that several pool sessions are open.
  defp concurrent_status(trellis) do
    1..6
    |> Task.async_stream(fn _ -> Trellis.status(trellis, "w") end, max_concurrency: 6)
    |> Enum.map(fn {:ok, result} -> result end)
  end

  defp open_sessions(url) do
    pg = SimplePG.connect!(url)

    count =
      SimplePG.scalar!(pg, """
      SELECT count(*) FROM pg_stat_activity
      WHERE application_name = 'trellis' AND backend_type = 'client backend'
      """)

    SimplePG.close(pg)
    String.to_integer(count)
  end

  for mode <- [:fast, :immediate] do
    test "every call succeeds after a #{mode} restart", %{
      holder: holder,
      url: url,
      trellis: trellis
    } do
      for _ <- 1..3, do: assert(Enum.all?(concurrent_status(trellis), &match?({:ok, _}, &1)))
      assert open_sessions(url) >= 2

      # The testkit commits asynchronously; an immediate shutdown would lose
      # the define's commit, which is not what this test is about.
      pg = SimplePG.connect!(url)
      SimplePG.query!(pg, "CHECKPOINT")
      SimplePG.close(pg)
      TestCluster.restart!(holder, url, unquote(mode))

      results = for _ <- 1..30, do: Trellis.status(trellis, "w")
      assert Enum.reject(results, &match?({:ok, %Trellis.Status{name: "w"}}, &1)) == []
      assert Enum.all?(concurrent_status(trellis), &match?({:ok, _}, &1))
    end
  end
end
