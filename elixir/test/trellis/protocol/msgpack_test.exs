defmodule Trellis.Protocol.MsgpackTest do
  use ExUnit.Case, async: true

  alias Trellis.Protocol.Msgpack
  alias Trellis.Test.Gen

  defp hex(iodata), do: Base.encode16(IO.iodata_to_binary(iodata), case: :lower)
  defp bytes(hex), do: Base.decode16!(hex, case: :lower)
  defp decode_hex(hex), do: Msgpack.decode(bytes(hex))

  describe "canonical encoding" do
    test "integers take their smallest form at every boundary" do
      cases = [
        {0, "00"},
        {127, "7f"},
        {128, "cc80"},
        {255, "ccff"},
        {256, "cd0100"},
        {65_535, "cdffff"},
        {65_536, "ce00010000"},
        {0xFFFF_FFFF, "ceffffffff"},
        {0x1_0000_0000, "cf0000000100000000"},
        {0xFFFF_FFFF_FFFF_FFFF, "cfffffffffffffffff"},
        {-1, "ff"},
        {-32, "e0"},
        {-33, "d0df"},
        {-128, "d080"},
        {-129, "d1ff7f"},
        {-32_768, "d18000"},
        {-32_769, "d2ffff7fff"},
        {-0x8000_0000, "d280000000"},
        {-0x8000_0001, "d3ffffffff7fffffff"},
        {-0x8000_0000_0000_0000, "d38000000000000000"}
      ]

      for {int, expected} <- cases, do: assert({int, hex(Msgpack.encode(int))} == {int, expected})
    end

    test "integers beyond 64 bits are refused" do
      assert_raise ArgumentError, ~r/does not fit in 64 bits/, fn ->
        Msgpack.encode(0x1_0000_0000_0000_0000)
      end

      assert_raise ArgumentError, ~r/does not fit in 64 bits/, fn ->
        Msgpack.encode(-0x8000_0000_0000_0001)
      end
    end

    test "floats are float 64, non-finite ones from their atoms" do
      assert hex(Msgpack.encode(1.5)) == "cb3ff8000000000000"
      assert hex(Msgpack.encode(:nan)) == "cb7ff8000000000000"
      assert hex(Msgpack.encode(:infinity)) == "cb7ff0000000000000"
      assert hex(Msgpack.encode(:neg_infinity)) == "cbfff0000000000000"
    end

    test "str and bin headers at their boundaries" do
      assert hex(Msgpack.encode("")) == "a0"
      assert hex(Msgpack.encode(String.duplicate("a", 31))) =~ ~r/^bf/
      assert hex(Msgpack.encode(String.duplicate("a", 32))) =~ ~r/^d920/
      assert hex(Msgpack.encode(String.duplicate("a", 256))) =~ ~r/^da0100/
      assert hex(Msgpack.encode(String.duplicate("a", 65_536))) =~ ~r/^db00010000/
      assert hex(Msgpack.encode({:bin, ""})) == "c400"
      assert hex(Msgpack.encode({:bin, <<1, 2>>})) == "c4020102"
      assert hex(Msgpack.encode({:bin, :binary.copy(<<0>>, 256)})) =~ ~r/^c50100/
    end

    test "array and map headers at their boundaries" do
      assert hex(Msgpack.encode([])) == "90"
      assert hex(Msgpack.encode(List.duplicate(nil, 15))) =~ ~r/^9f/
      assert hex(Msgpack.encode(List.duplicate(nil, 16))) =~ ~r/^dc0010/
      assert hex(Msgpack.encode(%{})) == "80"
      assert hex(Msgpack.encode(Map.new(1..16, &{&1, nil}))) =~ ~r/^de0010/
    end

    test "atoms other than nil and booleans encode as the str of their name" do
      assert hex(Msgpack.encode(:ok)) == "a26f6b"
      assert hex(Msgpack.encode([nil, true, false])) == "93c0c3c2"
    end

    test "an ordered map keeps the pairs in the order given" do
      assert hex(Msgpack.encode({:map, [{"b", 1}, {"a", 2}]})) == "82a16201a16102"
    end

    test "terms msgpack cannot carry raise ArgumentError" do
      assert_raise ArgumentError, ~r/cannot encode/, fn -> Msgpack.encode({1, 2}) end
      assert_raise ArgumentError, ~r/cannot encode/, fn -> Msgpack.encode(self()) end
      assert_raise ArgumentError, ~r/cannot encode/, fn -> Msgpack.encode(~D[2024-01-01]) end
    end
  end

  describe "decoding" do
    test "every integer width decodes, including non-canonical ones" do
      assert decode_hex("cc05") == {:ok, 5}
      assert decode_hex("cd0005") == {:ok, 5}
      assert decode_hex("d3ffffffffffffffff") == {:ok, -1}
      assert decode_hex("cfffffffffffffffff") == {:ok, 0xFFFF_FFFF_FFFF_FFFF}
      assert decode_hex("d0ff") == {:ok, -1}
    end

    test "float 32 decodes to a float" do
      assert decode_hex("ca3fc00000") === {:ok, 1.5}
    end

    test "non-finite floats decode to atoms from either width" do
      assert decode_hex("cb7ff8000000000000") == {:ok, :nan}
      assert decode_hex("cb7ff0000000000001") == {:ok, :nan}
      assert decode_hex("cb7ff0000000000000") == {:ok, :infinity}
      assert decode_hex("cbfff0000000000000") == {:ok, :neg_infinity}
      assert decode_hex("ca7fc00000") == {:ok, :nan}
      assert decode_hex("ca7f800000") == {:ok, :infinity}
      assert decode_hex("caff800000") == {:ok, :neg_infinity}
    end

    test "str decodes to a binary without building atoms" do
      assert decode_hex("a26f6b") == {:ok, "ok"}
      assert decode_hex("c403000102") == {:ok, {:bin, <<0, 1, 2>>}}
    end

    test "a map with a repeated key keeps the last pair" do
      assert decode_hex("82a16101a16102") == {:ok, %{"a" => 2}}
    end

    test "an empty body is truncated" do
      assert Msgpack.decode(<<>>) == {:error, :truncated}
    end

    test "bytes after the value are trailing bytes" do
      assert decode_hex("c0c0") == {:error, :trailing_bytes}
    end

    test "ext, fixext and 0xc1 are unknown types" do
      for tag <- ["c1", "c70100", "c8000100", "c900000001", "d40000", "d5000000", "d800"] do
        assert {tag, decode_hex(tag)} == {tag, {:error, :unknown_type}}
      end
    end

    test "fixed-width values cut short are truncated" do
      for hex <- ["cc", "cd00", "ce000000", "cf00", "d0", "d3", "ca3fc0", "cb3ff8", "d9", "da00"] do
        assert {hex, decode_hex(hex)} == {hex, {:error, :truncated}}
      end
    end

    test "nesting 64 deep decodes and 65 deep is too deep" do
      deep = fn n -> :binary.copy(<<0x91>>, n - 1) <> <<0x90>> end
      assert {:ok, _} = Msgpack.decode(deep.(64))
      assert Msgpack.decode(deep.(65)) == {:error, :too_deep}

      map_deep = :binary.copy(<<0x81, 0xA1, ?k>>, 64) <> <<0x80>>
      assert Msgpack.decode(map_deep) == {:error, :too_deep}
    end

    test "declared sizes over the limits are refused before reading elements" do
      assert decode_hex("ddffffffff") == {:error, :limit_exceeded}
      assert decode_hex("dd00100001") == {:error, :limit_exceeded}
      assert decode_hex("df00010001") == {:error, :limit_exceeded}
      assert decode_hex("db00800001") == {:error, :limit_exceeded}
      assert decode_hex("c600800001") == {:error, :limit_exceeded}
    end

    test "declared sizes at the limits but past the bytes left are truncated" do
      assert decode_hex("dd00100000") == {:error, :truncated}
      assert decode_hex("df00010000") == {:error, :truncated}
      assert decode_hex("db00800000") == {:error, :truncated}
      assert decode_hex("a3616263") == {:ok, "abc"}
      assert decode_hex("a36162") == {:error, :truncated}
      assert decode_hex("820101") == {:error, :truncated}
    end

    test "the first problem reading left to right wins" do
      # An element's unknown type comes before the array running out of bytes.
      assert decode_hex("93c1") == {:error, :unknown_type}
      # At a container, its declared size is checked before its depth.
      too_deep_and_too_big = :binary.copy(<<0x91>>, 64) <> <<0xDD, 0xFF, 0xFF, 0xFF, 0xFF>>
      assert Msgpack.decode(too_deep_and_too_big) == {:error, :limit_exceeded}
      assert Msgpack.decode(:binary.copy(<<0x91>>, 64) <> <<0x91>>) == {:error, :too_deep}
    end

    test "a str of exactly 8 MiB decodes" do
      size = 8 * 1024 * 1024
      body = <<0xDB, size::32>> <> :binary.copy(<<?x>>, size)
      assert {:ok, text} = Msgpack.decode(body)
      assert byte_size(text) == size
    end
  end

  describe "round-trip properties" do
    test "random terms decode to what was encoded" do
      Gen.check(2000, fn term ->
        assert Msgpack.decode(IO.iodata_to_binary(Msgpack.encode(term))) === {:ok, term}
      end)
    end

    test "every proper prefix of an encoding is truncated" do
      Gen.check(200, fn term ->
        bytes = IO.iodata_to_binary(Msgpack.encode(term))

        for cut <- 0..(byte_size(bytes) - 1) do
          assert Msgpack.decode(binary_part(bytes, 0, cut)) == {:error, :truncated}
        end
      end)
    end

    test "an encoding followed by any byte has trailing bytes" do
      Gen.check(200, fn term ->
        bytes = IO.iodata_to_binary(Msgpack.encode(term))
        assert Msgpack.decode(bytes <> <<:rand.uniform(256) - 1>>) == {:error, :trailing_bytes}
      end)
    end
  end
end
