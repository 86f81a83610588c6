defmodule Trellis.ProtocolVersionTest do
  # The Elixir side's check of the port program's hello (spec/protocol.md,
  # "hello"): a port program of another major protocol version is refused
  # before anything is sent to it. The port program here is a stand-in, a
  # shell script that writes one hello frame on fd 4 and waits for fd 3 to
  # close: what is under test is the Elixir side, not the real port.
  #
  # Not async: it points TRELLIS_PORT_PATH, which every handle reads, at
  # the stand-in for the length of each test.
  use ExUnit.Case, async: false

  alias Trellis.{Error, Protocol}

  @moduletag :tmp_dir

  # A stand-in port program whose first and only frame is a hello event
  # with `payload`; it exits when the VM closes the port. Returns the path
  # of a file it writes its OS pid to.
  defp stand_in!(dir, payload) do
    body = IO.iodata_to_binary(Protocol.encode_message({:event, "hello", payload}))
    frame = Path.join(dir, "hello.frame")
    File.write!(frame, <<byte_size(body)::32, body::binary>>)
    pid_file = Path.join(dir, "stand_in.pid")
    script = Path.join(dir, "stand-in-port")

    File.write!(script, """
    #!/bin/sh
    echo $$ > '#{pid_file}'
    cat '#{frame}' >&4
    exec cat <&3 >/dev/null
    """)

    File.chmod!(script, 0o755)

    previous = System.get_env("TRELLIS_PORT_PATH")
    System.put_env("TRELLIS_PORT_PATH", script)

    on_exit(fn ->
      if previous,
        do: System.put_env("TRELLIS_PORT_PATH", previous),
        else: System.delete_env("TRELLIS_PORT_PATH")
    end)

    pid_file
  end

  defp exited?(pid_file) do
    Enum.any?(1..100, fn _ ->
      (File.exists?(pid_file) and not File.exists?("/proc/#{String.trim(File.read!(pid_file))}")) ||
        (Process.sleep(20) && false)
    end)
  end

  test "a port program that speaks protocol major 2 is refused, naming both versions",
       %{tmp_dir: dir} do
    assert Protocol.major_version() == 1
    pid_file = stand_in!(dir, %{"protocol" => [2, 0], "engine_version" => "2.0.0"})

    assert {:error, %Error{code: :protocol, message: message}} =
             Trellis.connect(url: "postgres://localhost/never_reached", timeout_ms: 5_000)

    assert message == "the port program speaks protocol 2.0; this package speaks 1.x"
    # Refused means closed: the stand-in saw its input end and exited.
    assert exited?(pid_file)
  end

  test "a newer minor version of protocol 1 passes the hello check", %{tmp_dir: dir} do
    stand_in!(dir, %{"protocol" => [1, 99], "engine_version" => "1.99.0"})

    # The stand-in never answers the connect request that follows a
    # hello it accepted: the call runs out of its budget instead.
    assert {:error, %Error{code: :timeout}} =
             Trellis.connect(url: "postgres://localhost/never_reached", timeout_ms: 300)
  end

  test "a hello without a protocol version is refused", %{tmp_dir: dir} do
    stand_in!(dir, %{"engine_version" => "0.0.1"})

    assert {:error, %Error{code: :protocol, message: message}} =
             Trellis.connect(url: "postgres://localhost/never_reached", timeout_ms: 5_000)

    assert message =~ "hello has no protocol version"
  end
end
