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
            {[url: @url, pool_size: "4"], ~s(option :pool_size must be an integer, got: "4")},
            {[url: @url, staging: "yes"], ~s(option :staging must be a boolean, got: "yes")},
            {[url: @url, timeout_ms: 1.5], "option :timeout_ms must be an integer, got: 1.5"},
            {[url: @url, schema: :trellis], "option :schema must be a string, got: :trellis"},
            {[url: @url, record: ~c"x"], "option :record must be a file path (a string)"},
            {[url: String.to_charlist(@url)], "option :url must be a string (a PostgreSQL URL)"}
          ] do
        error = assert_raise ArgumentError, fn -> Trellis.connect(opts) end
        assert error.message =~ words
        refute error.message =~ "hunter2"
      end
    end

    test "a value out of range is a :validation error naming the option, before any port starts" do
      for {opts, message} <- [
            {[url: @url, pool_size: 0], "option :pool_size must be in 1..100, got: 0"},
            {[url: @url, pool_size: 101], "option :pool_size must be in 1..100, got: 101"},
            {[url: @url, drain_threads: -1], "option :drain_threads must be in 0..100, got: -1"},
            {[url: @url, timeout_ms: 0],
             "option :timeout_ms must be a positive number of milliseconds, got: 0"},
            {[url: @url, schema: ""], ~s(option :schema must be a non-empty string, got: "")},
            {[url: ""], "option :url must be a non-empty string"}
          ] do
        assert {:error, %Error{code: :validation, message: ^message}} = Trellis.connect(opts)

        assert {:error, %Error{code: :validation, message: ^message}} =
                 Trellis.start_link([name: :never_started] ++ opts)
      end

      assert Process.whereis(:never_started) == nil
    end

    test "config/1's wire map keeps the options this package knows, and the handle's budget" do
      wire = %{"pool_size" => 2, "schema" => "s", "newer_option" => true, "timeout_ms" => 1}

      assert Trellis.Options.from_wire(wire, 5_000) == %{
               pool_size: 2,
               schema: "s",
               timeout_ms: 5_000
             }
    end

    test "nil takes an option's default" do
      assert {:ok, opts} = Trellis.Options.validate(:connect, url: @url, pool_size: nil)
      assert opts[:pool_size] == 10
      assert opts[:schema] == "trellis"
      assert opts[:timeout_ms] == 30_000
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
      assert_raise ArgumentError, ~r/expected a Trellis handle/, fn -> Trellis.shutdown(1) end
    end
  end

  describe "arguments: a wrong type raises, a bad value is a :validation error" do
    test "statements and names must be strings" do
      assert_raise ArgumentError, "apply: the statement must be a string, got: :pause", fn ->
        Trellis.apply(NoSuchTrellis, :pause)
      end

      assert_raise ArgumentError, ~r/^define: the statement must be a string/, fn ->
        Trellis.define!(NoSuchTrellis, ~c"TRANSFORM t FROM s SELECT a AS a")
      end

      assert_raise ArgumentError, "status: the transform name must be a string, got: nil", fn ->
        Trellis.status(NoSuchTrellis, nil)
      end

      assert_raise ArgumentError,
                   ~r/^request_backfill: the transform name must be a string/,
                   fn ->
                     Trellis.request_backfill(NoSuchTrellis, :widget_prices)
                   end
    end

    test "await_converged/3: token and option types raise, an out-of-range budget is refused" do
      assert_raise ArgumentError, ~r/takes the token as a binary/, fn ->
        Trellis.await_converged(NoSuchTrellis, 1)
      end

      assert_raise ArgumentError, ~r/unknown keys \[:wait\]/, fn ->
        Trellis.await_converged(NoSuchTrellis, "t", wait: 1)
      end

      assert_raise ArgumentError, "option :timeout_ms must be an integer, got: 1.0", fn ->
        Trellis.await_converged(NoSuchTrellis, "t", timeout_ms: 1.0)
      end

      for bad <- [0, -5, 86_400_001] do
        assert {:error, %Error{code: :validation, message: message}} =
                 Trellis.await_converged(NoSuchTrellis, "t", timeout_ms: bad)

        assert message =~ "option :timeout_ms must be in 1..86400000"
      end
    end

    test "bang variants are generated with their own docs and specs" do
      {:docs_v1, _, _, _, _, _, docs} = Code.fetch_docs(Trellis)

      bangs =
        for {{:function, name, arity}, _, _, %{"en" => doc}, _} <- docs,
            String.ends_with?(Atom.to_string(name), "!"),
            do: {name, arity, doc}

      assert length(bangs) == 24

      for {name, arity, doc} <- bangs do
        plain = name |> Atom.to_string() |> String.trim_trailing("!")
        assert doc =~ "Like `#{plain}/#{arity}`, but returns"
        assert doc =~ "Trellis.#{name}("
      end

      {:ok, specs} = Code.Typespec.fetch_specs(Trellis)
      assert Enum.all?(bangs, fn {name, arity, _} -> List.keymember?(specs, {name, arity}, 0) end)
    end
  end

  # A pid of another node, built from its external term format (NEW_PID_EXT)
  # so the test needs no distribution.
  defp remote_pid(node) do
    name = Atom.to_string(node)
    :erlang.binary_to_term(<<131, 88, 119, byte_size(name), name::binary, 1::32, 0::32, 1::32>>)
  end
end
