# Tests tagged :port run through the real trellis-port against the suite's
# one throwaway PostgreSQL cluster (trellis-testkit). When either binary is
# missing they are excluded with a warning, so the codec tests still run;
# set TRELLIS_REQUIRE_PORT=1 (as scripts/test.sh does) or TRELLIS_CI=1 (as
# .ci/run does) to make that an error instead. Under CI a skipped test fails
# the suite too (Trellis.Test.CI).

Trellis.Test.CI.fail_on_skipped()

binaries =
  with {:ok, port_path} <- Trellis.PortBinary.path(),
       {:ok, testkit_path} <- Trellis.TestCluster.testkit_path() do
    {:ok, port_path, testkit_path}
  else
    {:error, %Trellis.Error{message: message}} -> {:error, message}
    {:error, message} -> {:error, message}
  end

# The logical leg (scripts/test.sh): every handle captures by logical
# decoding unless a test says otherwise, on a suite cluster with
# wal_level = logical.
case System.get_env("TRELLIS_TEST_CAPTURE") do
  nil ->
    :ok

  "logical" ->
    System.get_env("TRELLIS_TESTKIT_LOGICAL") == "1" ||
      raise "TRELLIS_TEST_CAPTURE=logical needs TRELLIS_TESTKIT_LOGICAL=1 (a logical cluster)"

    Application.put_env(:trellis_pg, :capture, :logical)
    IO.puts("capture: :logical for every handle (TRELLIS_TEST_CAPTURE)")

  other ->
    raise "TRELLIS_TEST_CAPTURE must be logical or unset, got: #{inspect(other)}"
end

case binaries do
  {:ok, port_path, testkit_path} ->
    {_holder, url} = Trellis.TestCluster.start!(testkit_path)
    Application.put_env(:trellis_pg, :test_url, url)
    IO.puts("trellis-port: #{port_path}\ntest cluster: #{url}")
    ExUnit.start()

  {:error, message} ->
    cond do
      Trellis.Test.CI.ci?() ->
        raise "TRELLIS_CI is set (no test may skip), but: " <> message

      System.get_env("TRELLIS_REQUIRE_PORT") in ["1", "true"] ->
        raise "TRELLIS_REQUIRE_PORT is set, but: " <> message

      true ->
        :ok
    end

    IO.puts(:stderr, """
    #{IO.ANSI.format([:red, :bright, String.duplicate("=", 72)])}
    WARNING: tests tagged :port are EXCLUDED from this run.
    #{message}
    #{IO.ANSI.format([:red, :bright, String.duplicate("=", 72)])}
    """)

    ExUnit.start(exclude: [:port])
end
