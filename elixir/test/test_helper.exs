# Tests tagged :port run through the real trellis-port against the suite's
# one throwaway PostgreSQL cluster (trellis-testkit). When either binary is
# missing they are excluded with a warning, so the codec tests still run;
# set TRELLIS_REQUIRE_PORT=1 (as CI does) to make that an error instead.

binaries =
  with {:ok, port_path} <- Trellis.PortBinary.path(),
       {:ok, testkit_path} <- Trellis.TestCluster.testkit_path() do
    {:ok, port_path, testkit_path}
  else
    {:error, %Trellis.Error{message: message}} -> {:error, message}
    {:error, message} -> {:error, message}
  end

case binaries do
  {:ok, port_path, testkit_path} ->
    {_holder, url} = Trellis.TestCluster.start!(testkit_path)
    Application.put_env(:trellis_pg, :test_url, url)
    IO.puts("trellis-port: #{port_path}\ntest cluster: #{url}")
    ExUnit.start()

  {:error, message} ->
    if System.get_env("TRELLIS_REQUIRE_PORT") in ["1", "true"] do
      raise "TRELLIS_REQUIRE_PORT is set, but: " <> message
    end

    IO.puts(:stderr, """
    #{IO.ANSI.format([:red, :bright, String.duplicate("=", 72)])}
    WARNING: tests tagged :port are EXCLUDED from this run.
    #{message}
    #{IO.ANSI.format([:red, :bright, String.duplicate("=", 72)])}
    """)

    ExUnit.start(exclude: [:port])
end
