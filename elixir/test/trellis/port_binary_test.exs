defmodule Trellis.PortBinaryTest do
  # What the package's compiler relies on to pick and vouch for a binary:
  # the version's one home, the checksum file, the host's target name.
  use ExUnit.Case, async: true

  alias Trellis.PortBinary.{Checksum, Target}
  alias Trellis.TestCluster

  @tag :port
  test "the engine reports the version mix.exs declares (its one home)" do
    {:ok, trellis} = Trellis.connect(url: TestCluster.url())
    on_exit(fn -> Trellis.shutdown(trellis) end)
    {:ok, info} = Trellis.server_info(trellis)
    assert info.engine_version == Mix.Project.config()[:version]

    {:ok, path} = Trellis.PortBinary.path()
    {out, 0} = System.cmd(path, ["--version"])
    assert out =~ "trellis-port #{Mix.Project.config()[:version]} "
  end

  describe "the checksum file" do
    @tag :tmp_dir
    test "is read as data: file name -> sha256 digest", %{tmp_dir: dir} do
      digest = Checksum.digest("bytes")
      path = Path.join(dir, "checksum.exs")
      File.write!(path, "%{\n  \"trellis-port-1-x86_64-linux\" => \"#{digest}\"\n}\n")
      assert {:ok, %{"trellis-port-1-x86_64-linux" => ^digest}} = Checksum.read(path)
    end

    @tag :tmp_dir
    test "that holds code or malformed digests is refused, not evaluated", %{tmp_dir: dir} do
      path = Path.join(dir, "checksum.exs")

      for text <- [
            ~s|%{"a" => File.rm_rf!("/")}|,
            ~s|%{"a" => "sha256:abc"}|,
            ~s|%{"a" => "md5:#{String.duplicate("0", 64)}"}|,
            "[1, 2]"
          ] do
        File.write!(path, text)
        assert {:error, message} = Checksum.read(path)
        assert message =~ "is not a map of file names"
      end

      assert {:error, "cannot read " <> _} = Checksum.read(Path.join(dir, "missing.exs"))
    end

    test "verification names the file, the expected and the actual digest" do
      digests = %{"port-x" => Checksum.digest("good")}
      assert :ok = Checksum.verify(digests, "port-x", "good", "here")

      assert {:error, message} =
               Checksum.verify(digests, "port-x", "evil", "https://mirror/port-x")

      assert message =~ "port-x"
      assert message =~ "https://mirror/port-x"
      assert message =~ "expected #{Checksum.digest("good")}, got #{Checksum.digest("evil")}"
      assert {:error, message} = Checksum.verify(digests, "port-y", "good", "here")
      assert message =~ "no entry for port-y"
    end
  end

  test "targets are named by CPU and OS, one Linux binary per CPU for glibc and musl" do
    assert Target.from_architecture("x86_64-pc-linux-gnu") == "x86_64-linux"
    assert Target.from_architecture("x86_64-alpine-linux-musl") == "x86_64-linux"
    assert Target.from_architecture("aarch64-unknown-linux-gnu") == "aarch64-linux"
    assert Target.from_architecture("aarch64-apple-darwin23.1.0") == "aarch64-darwin"
    assert Target.from_architecture("amd64-portbld-freebsd14.0") == "x86_64-freebsd"
    if :os.type() == {:unix, :linux}, do: assert(Target.host() in Target.known())

    assert Target.file_name("0.1.0-alpha", "x86_64-linux") ==
             "trellis-port-0.1.0-alpha-x86_64-linux"
  end
end
