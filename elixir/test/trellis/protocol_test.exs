defmodule Trellis.ProtocolTest do
  use ExUnit.Case, async: true

  alias Trellis.Protocol
  import Bitwise

  alias Trellis.Protocol.Msgpack

  defp bin(iodata), do: IO.iodata_to_binary(iodata)
  defp pack(term), do: bin(Msgpack.encode(term))

  describe "requests and cancels" do
    test "a request without a budget is a four-element array" do
      assert bin(Protocol.encode_request(7, "ping", %{})) == <<0x94, 0, 7, 0xA4, "ping", 0x80>>
    end

    test "a request with a budget carries timeout_ms as its fifth element" do
      bytes = bin(Protocol.encode_request(7, "echo", %{"value" => 1}, 100))
      assert Protocol.decode_message(bytes) == {:ok, {:request, 7, "echo", %{"value" => 1}, 100}}
    end

    test "a cancel names its call" do
      assert bin(Protocol.encode_cancel(3)) == <<0x92, 2, 3>>
      assert Protocol.decode_message(<<0x92, 2, 3>>) == {:ok, {:cancel, 3}}
    end

    test "an invalid call id or budget is a programming error" do
      assert_raise ArgumentError, fn -> Protocol.encode_request(-1, "ping", %{}) end
      assert_raise ArgumentError, fn -> Protocol.encode_request(1 <<< 63, "ping", %{}) end
      assert_raise ArgumentError, fn -> Protocol.encode_request(1, "ping", %{}, 0) end
    end
  end

  describe "replies" do
    test "an ok reply carries its value" do
      assert Protocol.decode_message(pack([1, 9, "ok", "pong"])) ==
               {:ok, {:reply, 9, {:ok, "pong"}}}
    end

    test "an error reply fills the absent optional keys with nil and ignores unknown ones" do
      body =
        pack([1, 9, "error", %{"code" => "database", "message" => "m", "hint" => "h", "x" => 1}])

      assert Protocol.decode_message(body) ==
               {:ok,
                {:reply, 9,
                 {:error,
                  %{code: "database", message: "m", sqlstate: nil, detail: nil, hint: "h"}}}}
    end

    test "an error without a string code or message is a wrong shape" do
      assert Protocol.decode_message(pack([1, 9, "error", %{"code" => "x"}])) ==
               {:error, :bad_shape}

      assert Protocol.decode_message(pack([1, 9, "error", %{"code" => 1, "message" => "m"}])) ==
               {:error, :bad_shape}

      for sqlstate <- [5, nil] do
        error = %{"code" => "x", "message" => "m", "sqlstate" => sqlstate}
        assert Protocol.decode_message(pack([1, 9, "error", error])) == {:error, :bad_shape}
      end
    end

    test "error replies re-encode with their keys in spec order" do
      error = %{code: "timeout", message: "late", sqlstate: "57014", detail: nil, hint: nil}
      bytes = bin(Protocol.encode_message({:reply, 4, {:error, error}}))
      assert Protocol.decode_message(bytes) == {:ok, {:reply, 4, {:error, error}}}
      assert bytes =~ "code"
      refute bytes =~ "detail"
    end

    test "a reply status other than ok or error is a wrong shape" do
      assert Protocol.decode_message(pack([1, 9, "maybe", nil])) == {:error, :bad_shape}
    end
  end

  describe "events" do
    test "an event has a string kind and a map payload" do
      hello = %{"protocol" => [1, 0], "engine_version" => "0.1.0"}

      assert Protocol.decode_message(pack([3, "hello", hello])) ==
               {:ok, {:event, "hello", hello}}

      assert Protocol.decode_message(pack([3, "hello", []])) == {:error, :bad_shape}
    end
  end

  describe "malformed messages" do
    test "a body that is not an array or starts without a type is a wrong shape" do
      assert Protocol.decode_message(pack(%{})) == {:error, :bad_shape}
      assert Protocol.decode_message(pack([])) == {:error, :bad_shape}
      assert Protocol.decode_message(pack(["0", 1])) == {:error, :bad_shape}
    end

    test "a type beyond 3 is an unknown message type" do
      assert Protocol.decode_message(pack([4, 1])) == {:error, :unknown_message_type}
      assert Protocol.decode_message(pack([-1, 1])) == {:error, :unknown_message_type}
    end

    test "wrong element types or counts are wrong shapes" do
      for msg <- [
            [0, 1, 5, %{}],
            [0, 1, "op", []],
            [0, 1, "op", %{1 => 2}],
            [0, 1, "op", %{}, 0],
            [0, 1, "op", %{}, 5, 6],
            [0, -1, "op", %{}],
            [0, 1 <<< 63, "op", %{}],
            [2, 1, 2],
            [3, 1, %{}]
          ] do
        assert {msg, Protocol.decode_message(pack(msg))} == {msg, {:error, :bad_shape}}
      end
    end

    test "a repeated key in a message's own map is a wrong shape, deeper ones are values" do
      repeated = <<0x82, 0xA1, ?k, 1, 0xA1, ?k, 2>>

      assert Protocol.decode_message(<<0x94, 0, 1, 0xA2, "op">> <> repeated) ==
               {:error, :bad_shape}

      assert Protocol.decode_message(<<0x93, 3, 0xA1, ?e>> <> repeated) == {:error, :bad_shape}

      assert Protocol.decode_message(<<0x94, 1, 1, 0xA2, "ok">> <> repeated) ==
               {:ok, {:reply, 1, {:ok, %{"k" => 2}}}}

      nested = <<0x94, 0, 1, 0xA2, "op", 0x81, 0xA1, ?n>> <> repeated

      assert Protocol.decode_message(nested) ==
               {:ok, {:request, 1, "op", %{"n" => %{"k" => 2}}, nil}}
    end

    test "a body that is no array reports codec errors before its shape" do
      assert Protocol.decode_message(<<0xA5, "ab">>) == {:error, :truncated}
      assert Protocol.decode_message(<<0xC0, 0xC0>>) == {:error, :trailing_bytes}
      assert Protocol.decode_message(<<0xC0>>) == {:error, :bad_shape}
    end

    test "codec errors come through unchanged" do
      assert Protocol.decode_message(<<0x94, 0, 7, 0xA4, "pi">>) == {:error, :truncated}
      assert Protocol.decode_message(<<0x92, 2, 3, 0>>) == {:error, :trailing_bytes}
      assert Protocol.decode_message(<<0x93, 0xC1, 1, 2>>) == {:error, :unknown_type}

      assert Protocol.decode_message(<<0xDD, 0xFF, 0xFF, 0xFF, 0xFF>>) ==
               {:error, :limit_exceeded}

      assert Protocol.decode_message(<<0xDC, 0>>) == {:error, :truncated}
    end
  end

  describe "call_id_of/1 and route/1" do
    test "read the call id of bodies that do not decode" do
      assert Protocol.call_id_of(<<0x94, 0, 7, 0xA4, "pi">>) == {:ok, 7}
      assert Protocol.call_id_of(<<0x94, 0, 7, 0xC1>>) == {:ok, 7}
      assert Protocol.call_id_of(pack([9, 12])) == {:ok, 12}
      assert Protocol.call_id_of(pack([0, 5, 5, %{}])) == {:ok, 5}
      assert Protocol.call_id_of(pack(["any first element", 1])) == {:ok, 1}
      assert Protocol.call_id_of(<<0xDC, 0xFF, 0xFF, 0, 7>>) == {:ok, 7}
    end

    test "find no call id where the head is not a message head" do
      assert Protocol.call_id_of(<<>>) == :error
      assert Protocol.call_id_of(pack([0])) == :error
      assert Protocol.call_id_of(pack(%{"a" => 1})) == :error
      assert Protocol.call_id_of(<<0x92, 0xA5, "ab", 1>>) == :error
      assert Protocol.call_id_of(pack([0, 1 <<< 63])) == :error
      assert Protocol.call_id_of(pack([0, "1"])) == :error
      assert Protocol.call_id_of(pack([0, -1])) == :error
      assert Protocol.call_id_of(<<0x94, 0>>) == :error
    end

    test "route picks out replies by call id" do
      assert Protocol.route(pack([1, 42, "ok", nil])) == {:reply, 42}
      assert Protocol.route(pack([3, "log", %{}])) == :other
      assert Protocol.route(pack([0, 42, "ping", %{}])) == :other
      assert Protocol.route(<<0xC1>>) == :other
    end

    test "log_frame? knows a log event by its first bytes, as the encoder writes them" do
      log = IO.iodata_to_binary(Protocol.encode_message({:event, "log", %{"level" => "info"}}))
      assert Protocol.log_frame?(log)

      for other <- [
            {:event, "logs", %{}},
            {:event, "metrics", %{"families" => []}},
            {:event, "lo", %{}},
            {:reply, 3, {:ok, "log"}}
          ] do
        refute Protocol.log_frame?(IO.iodata_to_binary(Protocol.encode_message(other)))
      end

      refute Protocol.log_frame?(<<0x93, 0x03>>)
    end
  end
end
