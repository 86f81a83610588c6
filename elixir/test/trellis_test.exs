defmodule TrellisTest do
  # What needs no port program: option checks, handle resolution, errors.
  use ExUnit.Case, async: true

  alias Trellis.Error

  @url "postgres://app:hunter2@localhost/app"

  describe "connect/1 options" do
    test "an unknown option raises ArgumentError naming it, never the URL's password" do
      error = assert_raise ArgumentError, fn -> Trellis.connect(url: @url, pool: 3) end
      assert error.message =~ "unknown option(s) [:pool]"
      assert error.message =~ ":pool_size"
      refute error.message =~ "hunter2"
    end

    test "a value of the wrong type raises ArgumentError naming the option" do
      for {opts, words} <- [
            {[url: @url, pool_size: 0], "option :pool_size must be a positive integer"},
            {[url: @url, staging: "yes"], "option :staging must be a boolean"},
            {[url: @url, drain_threads: -1],
             "option :drain_threads must be a non-negative integer"},
            {[url: @url, timeout_ms: 1.5], "option :timeout_ms must be a positive integer"},
            {[url: @url, schema: ""], "option :schema must be a non-empty string"},
            {[url: String.to_charlist(@url)], "option :url must be a string"}
          ] do
        error = assert_raise ArgumentError, fn -> Trellis.connect(opts) end
        assert error.message =~ words
        refute error.message =~ "hunter2"
      end
    end

    test "the URL is required" do
      assert_raise ArgumentError, "option :url is required", fn ->
        Trellis.connect(schema: "x")
      end
    end

    test "options must be a keyword list" do
      assert_raise ArgumentError, ~r/expects a keyword list/, fn ->
        Trellis.connect(%{url: @url})
      end
    end

    test ":name belongs to start_link/1" do
      assert_raise ArgumentError, ~r/:name is for start_link/, fn ->
        Trellis.connect(url: @url, name: MyTrellis)
      end
    end

    test "start_link/1 needs an atom :name" do
      assert_raise ArgumentError, ~r/needs a :name/, fn -> Trellis.start_link(url: @url) end

      assert_raise ArgumentError, ~r/option :name must be an atom/, fn ->
        Trellis.start_link(url: @url, name: "x")
      end
    end
  end

  describe "child_spec/1" do
    test "is a permanent worker identified by its name" do
      spec = Trellis.child_spec(name: MyApp.Trellis, url: @url)
      assert spec.id == MyApp.Trellis
      assert spec.restart == :permanent
      assert spec.start == {Trellis, :start_link, [[name: MyApp.Trellis, url: @url]]}
    end
  end

  describe "handles" do
    test "a name with no handle behind it is a validation error" do
      assert {:error, %Error{code: :validation, message: message}} = Trellis.ping(NoSuchTrellis)
      assert message =~ "no Trellis handle is registered as NoSuchTrellis"
    end

    test "shutdown/1 refuses a name" do
      assert {:error, %Error{code: :validation, message: message}} =
               Trellis.shutdown(MyApp.Trellis)

      assert message =~ "supervisor"
    end

    test "a handle from another node is a validation error" do
      remote = remote_pid(:other@host)
      handle = %Trellis{owner: remote, port: nil, table: nil, state: nil, timeout_ms: 1}

      assert {:error, %Error{code: :validation, message: message}} = Trellis.ping(handle)
      assert message =~ "node other@host"

      assert {:error, %Error{code: :validation}} = Trellis.server_info(handle)

      assert_raise Error, ~r/^\(validation\) .*only on the node that connected it/, fn ->
        Trellis.ping!(handle)
      end
    end

    test "anything else raises ArgumentError" do
      assert_raise ArgumentError, ~r/expected a Trellis handle/, fn -> Trellis.ping("x") end
      assert_raise ArgumentError, ~r/expected a Trellis handle/, fn -> Trellis.ping(nil) end
    end
  end

  # A pid of another node, built from its external term format (NEW_PID_EXT)
  # so the test needs no distribution.
  defp remote_pid(node) do
    name = Atom.to_string(node)
    :erlang.binary_to_term(<<131, 88, 119, byte_size(name), name::binary, 1::32, 0::32, 1::32>>)
  end
end
