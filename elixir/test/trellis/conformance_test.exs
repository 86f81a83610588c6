defmodule Trellis.ConformanceTest do
  # Runs every case of every spec/conformance/*.json file: the same vectors the
  # C++ suite runs, so the two codecs cannot drift apart. A new file or case
  # becomes a test here with no code change.
  #
  # Case kinds (every case has "name", "kind" and lowercase "hex"):
  #   value    "value": TYPED [+ "canonical": true]  |  "error": CLASS
  #   message  "message": MSG                         |  "error": CLASS [+ "call_id"]
  #   frame    "frames": [hex, ...] [+ "rest": count]  |  "error": "oversize_frame" [+ "frames"]
  use ExUnit.Case, async: true

  alias Trellis.Protocol
  alias Trellis.Protocol.{Frame, Msgpack}
  alias Trellis.Test.Conformance

  @files Conformance.files()

  for path <- Path.wildcard(Path.join(Conformance.dir(), "*.json")) do
    @external_resource path
  end

  test "the conformance directory holds vectors" do
    assert @files != [], "no vectors in #{Conformance.dir()}"
    assert Enum.all?(@files, fn {_file, cases} -> cases != [] end)
  end

  for {file, cases} <- @files, vector <- cases do
    @vector vector
    test "#{file}: #{vector["kind"]} #{vector["name"]}" do
      run(@vector)
    end
  end

  defp run(%{"kind" => "value", "hex" => hex, "value" => typed} = vector) do
    bytes = Conformance.bytes(hex)
    assert Msgpack.decode(bytes) === {:ok, Conformance.term(typed)}

    if vector["canonical"] do
      assert hex(Msgpack.encode(Conformance.encodable(typed))) == String.downcase(hex)
    end
  end

  defp run(%{"kind" => "value", "hex" => hex, "error" => class}) do
    assert {:error, got} = Msgpack.decode(Conformance.bytes(hex))
    assert Atom.to_string(got) == class
  end

  defp run(%{"kind" => "message", "hex" => hex, "message" => msg} = vector) do
    bytes = Conformance.bytes(hex)
    expected = Conformance.message(msg)
    assert Protocol.decode_message(bytes) === {:ok, expected}

    # Whatever decodes re-encodes to something that decodes the same.
    reencoded = IO.iodata_to_binary(Protocol.encode_message(expected))
    assert Protocol.decode_message(reencoded) === {:ok, expected}

    if vector["canonical"] do
      assert hex(Protocol.encode_message(Conformance.message(msg, :encodable))) ==
               String.downcase(hex)
    end
  end

  defp run(%{"kind" => "message", "hex" => hex, "error" => class} = vector) do
    bytes = Conformance.bytes(hex)
    assert {:error, got} = Protocol.decode_message(bytes)
    assert Atom.to_string(got) == class

    case vector["call_id"] do
      nil -> assert Protocol.call_id_of(bytes) == :error
      id -> assert Protocol.call_id_of(bytes) == {:ok, String.to_integer(id)}
    end
  end

  defp run(%{"kind" => "frame", "hex" => hex} = vector) do
    stream = Conformance.bytes(hex)
    expected = expected_split(vector)
    assert Frame.split(stream) == expected

    # The same stream cut in two at every byte gives the same frames.
    for cut <- 0..byte_size(stream) do
      <<first::binary-size(cut), second::binary>> = stream
      assert split_in_two(first, second) == expected, "cut at byte #{cut}"
    end
  end

  defp expected_split(%{"error" => "oversize_frame"} = vector) do
    {:error, :oversize_frame, Enum.map(vector["frames"] || [], &Conformance.bytes/1)}
  end

  defp expected_split(%{"hex" => hex, "frames" => frames} = vector) do
    {:ok, Enum.map(frames, &Conformance.bytes/1), rest(Conformance.bytes(hex), vector["rest"])}
  end

  # "rest" is the number of bytes left buffered (or, in hand-written vectors,
  # their hex); absent means none.
  defp rest(_stream, nil), do: ""

  defp rest(stream, count) when is_integer(count),
    do: binary_part(stream, byte_size(stream) - count, count)

  defp rest(_stream, hex) when is_binary(hex), do: Conformance.bytes(hex)

  defp split_in_two(first, second) do
    case Frame.split(first) do
      {:ok, frames, rest} ->
        case Frame.split(rest <> second) do
          {:ok, more, rest} -> {:ok, frames ++ more, rest}
          {:error, :oversize_frame, more} -> {:error, :oversize_frame, frames ++ more}
        end

      {:error, :oversize_frame, _frames} = error ->
        error
    end
  end

  defp hex(iodata), do: Base.encode16(IO.iodata_to_binary(iodata), case: :lower)
end
