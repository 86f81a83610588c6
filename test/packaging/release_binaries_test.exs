# The release binaries, driven over fds 3/4 through the trellis_pg package
# (the same Port.open the package always uses), against throwaway clusters
# from trellis-testkit, plain and TLS (sslmode=verify-full):
#
#   * the x86_64 binary inside a chroot that has no glibc at all (busybox and
#     musl only; scripts/test-packaging.sh builds it), reaching PostgreSQL by a
#     host name only the chroot's /etc/hosts knows, and by address;
#   * the cross-built aarch64 binary under qemu-aarch64-static.
#
# Each runs hello (checked by connect), server_info (the version agrees with
# mix.exs), migrate, define and status. Run from elixir/ by
# scripts/test-packaging.sh:
#   MIX_ENV=test mix run ../test/packaging/release_binaries_test.exs
# with TRELLIS_MUSL_PORT and TRELLIS_AARCH64_PORT (wrapper scripts that exec
# the binary in its chroot / under qemu), TRELLIS_MUSL_ROOT (the chroot) and
# TRELLIS_TESTKIT_PATH set.

ExUnit.start(autorun: true, timeout: 120_000)

defmodule Trellis.Packaging.ReleaseBinariesTest do
  use ExUnit.Case, async: false

  alias Trellis.TestCluster

  setup_all do
    testkit = System.fetch_env!("TRELLIS_TESTKIT_PATH")
    {_, plain} = TestCluster.start!(testkit)
    {_, tls} = TestCluster.start!(testkit, ["--tls"])
    %{plain: plain, tls: tls}
  end

  # A URL naming `host` instead of the testkit's host.
  defp with_host(url, host), do: url |> URI.parse() |> Map.put(:host, host) |> URI.to_string()

  defp psql!(url, sql) do
    psql = Path.join(System.get_env("PG_BIN", "/usr/lib/postgresql/15/bin"), "psql")

    {out, status} =
      System.cmd(psql, [url, "-v", "ON_ERROR_STOP=1", "-qAtc", sql], stderr_to_stdout: true)

    assert status == 0, out
    out
  end

  # hello, server_info, migrate, define, status through `wrapper`.
  defp session!(wrapper, admin_url, port_url) do
    System.put_env("TRELLIS_PORT_PATH", wrapper)
    source = "src_#{System.unique_integer([:positive])}"
    psql!(admin_url, "CREATE TABLE #{source} (id bigint PRIMARY KEY, price numeric)")

    {:ok, trellis} = Trellis.connect(url: port_url, timeout_ms: 60_000)
    {:ok, info} = Trellis.server_info(trellis)
    assert info.engine_version == Mix.Project.config()[:version]
    assert :ok = Trellis.migrate(trellis)
    statement = "TRANSFORM #{source}_t FROM #{source} SELECT price AS price"
    assert {:ok, {:transform_defined, target}} = Trellis.define(trellis, statement)
    assert {:ok, %Trellis.Status{}} = Trellis.status(trellis, target)
    :ok = Trellis.shutdown(trellis)
  after
    System.delete_env("TRELLIS_PORT_PATH")
  end

  # The URL's sslrootcert, at the same path inside the chroot.
  defp copy_ca_into_chroot(url) do
    %{"sslrootcert" => ca} = URI.decode_query(URI.parse(url).query)
    inside = Path.join(System.fetch_env!("TRELLIS_MUSL_ROOT"), ca)
    File.mkdir_p!(Path.dirname(inside))
    File.cp!(ca, inside)
  end

  describe "x86_64 binary in a root without glibc" do
    setup do
      %{port: System.fetch_env!("TRELLIS_MUSL_PORT")}
    end

    test "connects by a host name from the chroot's /etc/hosts", c do
      session!(c.port, c.plain, with_host(c.plain, "pg.trellis.test"))
    end

    test "connects by address", c do
      session!(c.port, c.plain, with_host(c.plain, "127.0.0.1"))
    end

    test "connects over TLS by host name, verifying the certificate (verify-full)", c do
      copy_ca_into_chroot(c.tls)
      session!(c.port, c.tls, c.tls)
    end

    test "connects over TLS by address (verify-full against the IP SAN)", c do
      copy_ca_into_chroot(c.tls)
      session!(c.port, c.tls, with_host(c.tls, "127.0.0.1"))
    end

    test "refuses a name the chroot cannot resolve, naming it", c do
      System.put_env("TRELLIS_PORT_PATH", c.port)
      url = with_host(c.plain, "nowhere.trellis.test")

      assert {:error, %Trellis.Error{code: :connection, message: message}} =
               Trellis.connect(url: url)

      assert message =~ "nowhere.trellis.test"
    after
      System.delete_env("TRELLIS_PORT_PATH")
    end
  end

  describe "aarch64 binary under qemu-aarch64-static" do
    setup do
      %{port: System.fetch_env!("TRELLIS_AARCH64_PORT")}
    end

    test "connects by host name (localhost) and by address", c do
      session!(c.port, c.plain, with_host(c.plain, "localhost"))
      session!(c.port, c.plain, with_host(c.plain, "127.0.0.1"))
    end

    test "connects over TLS (verify-full)", c do
      session!(c.port, c.tls, c.tls)
    end
  end
end
