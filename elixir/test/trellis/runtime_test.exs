defmodule Trellis.RuntimeTest do
  # The port runtime seen from the app: calls that wait on the database do
  # not hold up other processes' calls; a call past its budget is stopped on
  # the server; TLS URLs are honoured; a capture made from Elixir decodes and
  # replays; and a VM that exits leaves no port program behind.
  use ExUnit.Case, async: false

  alias Trellis.Test.{Database, SimplePG}

  @moduletag :port
  @moduletag timeout: 120_000

  setup do
    url = Database.create!("runtime")
    trellis = Trellis.connect!(url: url)
    :ok = Trellis.migrate(trellis)
    pg = SimplePG.connect!(url)
    on_exit(fn -> SimplePG.close(pg) end)
    %{url: url, trellis: trellis, pg: pg}
  end

  # Another database session holds the catalog table, so any catalog read
  # on the handle waits for it.
  defp lock_catalog(url) do
    locker = SimplePG.connect!(url)
    SimplePG.query!(locker, "BEGIN; LOCK TABLE trellis.transforms IN ACCESS EXCLUSIVE MODE")
    locker
  end

  test "a call stuck on a lock does not delay another process's call", %{
    url: url,
    trellis: trellis
  } do
    locker = lock_catalog(url)
    stuck = Task.async(fn -> Trellis.definitions(trellis) end)
    Process.sleep(200)
    assert Task.yield(stuck, 0) == nil

    # Answered while the other call is still stuck: it did not queue behind it.
    assert {:ok, info} = Trellis.server_info(trellis)
    assert info.instance =~ "/trellis"
    assert Task.yield(stuck, 0) == nil, "the other call was meant to be still waiting"

    SimplePG.query!(locker, "ROLLBACK")
    assert {:ok, []} = Task.await(stuck)
    SimplePG.close(locker)
  end

  test "a call past its budget is a :timeout and its query is gone from the server", %{
    url: url,
    trellis: trellis,
    pg: pg
  } do
    locker = lock_catalog(url)
    started = System.monotonic_time(:millisecond)

    assert {:error, %Trellis.Error{code: :timeout, message: message}} =
             Trellis.Call.call(trellis, "definitions", %{}, timeout_ms: 1_000)

    # Within the budget, counted from submission, and answered by the port
    # program after its server-side cancel (not cut off by the caller).
    assert System.monotonic_time(:millisecond) - started < 1_000
    assert message =~ ~s(op "definitions" ran past its)

    # The port cancelled the statement on the server (PQcancel), so nothing of
    # it is left waiting on the lock.
    waiting = fn ->
      SimplePG.scalar!(pg, """
      SELECT count(*) FROM pg_stat_activity
      WHERE datname = current_database() AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()
      """)
    end

    assert Enum.any?(1..50, fn _ -> waiting.() == "0" || (Process.sleep(20) && false) end)
    SimplePG.query!(locker, "ROLLBACK")
    SimplePG.close(locker)
    assert {:ok, []} = Trellis.definitions(trellis)
  end

  test "await_converged/3 answers within its own budget, which may exceed the handle's", %{
    url: url,
    pg: pg
  } do
    # No drain worker anywhere: a write never converges.
    SimplePG.query!(pg, "CREATE TABLE gadgets (id int PRIMARY KEY, price int)")
    short = Trellis.connect!(url: url, timeout_ms: 1_000)
    {:ok, _} = Trellis.define(short, "TRANSFORM gadget_prices FROM gadgets SELECT price AS p")
    SimplePG.query!(pg, "INSERT INTO gadgets VALUES (1, 1)")
    token = Trellis.watermark_token!(short)

    for {opts, budget} <- [{[], 1_000}, {[timeout_ms: 3_000], 3_000}] do
      started = System.monotonic_time(:millisecond)

      assert {:error, %Trellis.Error{code: :timeout, message: message}} =
               Trellis.await_converged(short, token, opts)

      waited = System.monotonic_time(:millisecond) - started
      # Never past the budget (it used to be the budget plus 5 s); the
      # slack is the scheduler's on a loaded machine.
      assert waited < budget + 100
      assert waited >= budget - 2 * Trellis.Call.margin_ms(budget) - 20

      # With room to spare, the answer is the server's ("not converged"),
      # not the caller giving up.
      if budget == 3_000 do
        assert message ==
                 "writes committed before the token had not converged within #{budget} ms"
      end
    end

    Trellis.shutdown!(short)
  end

  test "a TLS URL with sslmode=verify-full is honoured" do
    {:ok, testkit} = Trellis.TestCluster.testkit_path()
    {holder, tls_url} = Trellis.TestCluster.start!(testkit, ["--tls"])
    assert tls_url =~ "sslmode=verify-full"

    trellis = Trellis.connect!(url: tls_url)
    assert {:ok, %{server_version: _}} = Trellis.server_info(trellis)
    Trellis.shutdown(trellis)

    # The same server with a root certificate that did not sign it is refused.
    wrong_root =
      Path.join(System.tmp_dir!(), "trellis-wrong-root-#{System.unique_integer([:positive])}.crt")

    {_, 0} = System.cmd("openssl", ~w(req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=nobody
        -keyout #{wrong_root}.key -out #{wrong_root}), stderr_to_stdout: true)

    bad_url = String.replace(tls_url, ~r/sslrootcert=[^&]+/, "sslrootcert=#{wrong_root}")
    assert {:error, %Trellis.Error{code: :connection}} = Trellis.connect(url: bad_url)
    Process.exit(holder, :kill)
  end

  test "a capture recorded from Elixir decodes and replays against a fresh database", %{
    url: url
  } do
    path = Path.join(System.tmp_dir!(), "trellis-#{System.unique_integer([:positive])}.capture")
    setup_sql = "CREATE TABLE widgets (id int PRIMARY KEY, price numeric)"
    SimplePG.query!(SimplePG.connect!(url), setup_sql)

    recorded = Trellis.connect!(url: url, record: path)

    {:transform_defined, "w"} =
      Trellis.define!(recorded, "TRANSFORM w FROM widgets SELECT price AS p")

    {:error, %Trellis.Error{code: :already_exists}} =
      Trellis.define(recorded, "TRANSFORM w FROM widgets SELECT price AS p")

    [%Trellis.Definition{name: "w"}] = Trellis.definitions!(recorded)
    :ok = Trellis.shutdown(recorded)

    {:ok, port_path} = Trellis.PortBinary.path()
    {decoded, 0} = System.cmd(port_path, ["decode", path])
    assert decoded =~ "define"
    assert decoded =~ "already_exists"
    refute decoded =~ "password"

    # The same requests against a database in the same starting state.
    fresh = Database.create!("replay")
    fresh_pg = SimplePG.connect!(fresh)
    SimplePG.query!(fresh_pg, setup_sql)
    # The recording did not include migrate (the setup handle ran it).
    :ok = Trellis.migrate(Trellis.connect!(url: fresh))

    {out, status} =
      System.cmd(port_path, ["replay", path, "--url", fresh], stderr_to_stdout: true)

    assert status == 0, out

    # Replayed where the transform already exists, the define's reply differs.
    {out, status} =
      System.cmd(port_path, ["replay", path, "--url", fresh], stderr_to_stdout: true)

    assert status == 1, out
  end

  test "a VM that exits leaves no trellis-port process behind", %{url: url} do
    ebin = Path.join(Mix.Project.build_path(), "lib/trellis_pg/ebin")
    {:ok, port_path} = Trellis.PortBinary.path()

    script = """
    Application.put_env(:trellis_pg, :port_path, #{inspect(port_path)})
    {:ok, _} = Application.ensure_all_started(:trellis_pg)
    t = Trellis.connect!(url: #{inspect(url)}, drain_threads: 1)
    {:os_pid, pid} = Port.info(t.port, :os_pid)
    IO.puts("PID=\#{pid}")
    System.halt(0)
    """

    {out, 0} = System.cmd("elixir", ["-pa", ebin, "-e", script], stderr_to_stdout: true)
    [_, pid] = Regex.run(~r/PID=(\d+)/, out)

    gone =
      Enum.any?(1..100, fn _ ->
        not File.exists?("/proc/#{pid}") || (Process.sleep(20) && false)
      end)

    assert gone, "trellis-port #{pid} outlived its VM"
  end
end
