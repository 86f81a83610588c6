defmodule Trellis.Protocol.Msgpack do
  @moduledoc false

  # The msgpack codec of spec/protocol.md section 2. Pure functions, no
  # process, no atoms built from input.
  #
  # Representation (decode gives, encode takes):
  #
  #   msgpack            Elixir
  #   nil, true, false   nil, true, false
  #   integers           integers (-2^63 .. 2^64 - 1)
  #   float 32/64        floats; NaN, +Inf and -Inf, which an Elixir float
  #                      cannot hold, are the atoms :nan, :infinity and
  #                      :neg_infinity (and encode back to float 64)
  #   str                binary
  #   bin                {:bin, binary}
  #   array              list
  #   map                map; the spec does not forbid a repeated key, and an
  #                      Elixir map cannot hold one, so the last pair wins
  #
  # Encoding also takes any other atom (as the str of its name, so `:ok`
  # encodes as "ok") and `{:map, [{key, value}, ...]}`, a map whose pairs are
  # written in the order given (Elixir maps have no order of their own; the
  # conformance vectors need one).
  #
  # Encoding is canonical: integers in their smallest form, floats as float 64,
  # the shortest str/bin/array/map headers.
  #
  # Decode limits are checked against each declared size before anything is
  # built, so a short frame cannot make the decoder allocate much. Errors are
  # classified exactly as the C++ side does (protocol/src/scan.h): the first
  # problem met reading left to right wins.

  @max_depth 64
  @max_bytes 8 * 1024 * 1024
  @max_array 1_048_576
  @max_map 65_536

  @type value ::
          nil
          | boolean
          | integer
          | float
          | :nan
          | :infinity
          | :neg_infinity
          | binary
          | {:bin, binary}
          | [value]
          | %{optional(value) => value}

  @type error_class :: :truncated | :trailing_bytes | :too_deep | :limit_exceeded | :unknown_type

  @doc false
  def limits do
    %{depth: @max_depth, bytes: @max_bytes, array: @max_array, map: @max_map}
  end

  ## Encoding

  @doc "Encodes a term to iodata. Raises ArgumentError for a term msgpack cannot carry."
  @spec encode(term) :: iodata
  def encode(nil), do: <<0xC0>>
  def encode(false), do: <<0xC2>>
  def encode(true), do: <<0xC3>>
  def encode(:nan), do: <<0xCB, 0x7FF8_0000_0000_0000::64>>
  def encode(:infinity), do: <<0xCB, 0x7FF0_0000_0000_0000::64>>
  def encode(:neg_infinity), do: <<0xCB, 0xFFF0_0000_0000_0000::64>>
  def encode(int) when is_integer(int), do: encode_integer(int)
  def encode(float) when is_float(float), do: <<0xCB, float::float-64>>
  def encode(text) when is_binary(text), do: [str_header(byte_size(text)), text]
  def encode({:bin, bytes}) when is_binary(bytes), do: [bin_header(byte_size(bytes)), bytes]

  def encode({:map, pairs}) when is_list(pairs) do
    [map_header(length(pairs)) | Enum.map(pairs, fn {k, v} -> [encode(k), encode(v)] end)]
  end

  def encode(atom) when is_atom(atom), do: encode(Atom.to_string(atom))

  def encode(list) when is_list(list) do
    [array_header(length(list)) | Enum.map(list, &encode/1)]
  end

  def encode(map) when is_map(map) and not is_struct(map) do
    [map_header(map_size(map)) | Enum.map(map, fn {k, v} -> [encode(k), encode(v)] end)]
  end

  def encode(other) do
    raise ArgumentError, "msgpack cannot encode #{inspect(other)}"
  end

  defp encode_integer(n) when n >= 0 do
    cond do
      n < 0x80 -> <<n>>
      n <= 0xFF -> <<0xCC, n>>
      n <= 0xFFFF -> <<0xCD, n::16>>
      n <= 0xFFFF_FFFF -> <<0xCE, n::32>>
      n <= 0xFFFF_FFFF_FFFF_FFFF -> <<0xCF, n::64>>
      true -> raise ArgumentError, "integer #{n} does not fit in 64 bits"
    end
  end

  defp encode_integer(n) do
    cond do
      n >= -32 -> <<n::signed-8>>
      n >= -0x80 -> <<0xD0, n::signed-8>>
      n >= -0x8000 -> <<0xD1, n::signed-16>>
      n >= -0x8000_0000 -> <<0xD2, n::signed-32>>
      n >= -0x8000_0000_0000_0000 -> <<0xD3, n::signed-64>>
      true -> raise ArgumentError, "integer #{n} does not fit in 64 bits"
    end
  end

  defp str_header(n) when n < 32, do: <<0b101::3, n::5>>
  defp str_header(n) when n <= 0xFF, do: <<0xD9, n>>
  defp str_header(n) when n <= 0xFFFF, do: <<0xDA, n::16>>
  defp str_header(n), do: <<0xDB, checked_u32(n)::32>>

  defp bin_header(n) when n <= 0xFF, do: <<0xC4, n>>
  defp bin_header(n) when n <= 0xFFFF, do: <<0xC5, n::16>>
  defp bin_header(n), do: <<0xC6, checked_u32(n)::32>>

  defp array_header(n) when n < 16, do: <<0b1001::4, n::4>>
  defp array_header(n) when n <= 0xFFFF, do: <<0xDC, n::16>>
  defp array_header(n), do: <<0xDD, checked_u32(n)::32>>

  defp map_header(n) when n < 16, do: <<0b1000::4, n::4>>
  defp map_header(n) when n <= 0xFFFF, do: <<0xDE, n::16>>
  defp map_header(n), do: <<0xDF, checked_u32(n)::32>>

  defp checked_u32(n) when n <= 0xFFFF_FFFF, do: n
  defp checked_u32(n), do: raise(ArgumentError, "length #{n} does not fit msgpack's 32 bits")

  ## Decoding

  @doc "Decodes exactly one value filling the whole binary."
  @spec decode(binary) :: {:ok, value} | {:error, error_class}
  def decode(binary) when is_binary(binary) do
    case value(binary, 0) do
      {:ok, term, <<>>} -> {:ok, term}
      {:ok, _term, _rest} -> {:error, :trailing_bytes}
      {:error, _class} = error -> error
    end
  end

  @doc """
  Decodes one value from the front of the binary and returns the bytes after
  it. `depth` is the number of containers around the value (0 at the top).
  """
  @spec decode_prefix(binary, non_neg_integer) :: {:ok, value, binary} | {:error, error_class}
  def decode_prefix(binary, depth \\ 0) when is_binary(binary), do: value(binary, depth)

  @doc """
  Reads an array header from the front of the binary: `{:ok, count, rest}`.
  The count is checked against the array limit, not against the bytes left
  (the elements are read one by one after it).
  """
  @spec decode_array_header(binary) ::
          {:ok, non_neg_integer, binary} | {:error, :truncated | :limit_exceeded | :not_array}
  def decode_array_header(<<0b1001::4, n::4, rest::binary>>), do: {:ok, n, rest}
  def decode_array_header(<<0xDC, n::16, rest::binary>>), do: checked_array_header(n, rest)
  def decode_array_header(<<0xDD, n::32, rest::binary>>), do: checked_array_header(n, rest)
  def decode_array_header(<<tag, _::binary>>) when tag in [0xDC, 0xDD], do: {:error, :truncated}
  def decode_array_header(<<>>), do: {:error, :truncated}
  def decode_array_header(_other), do: {:error, :not_array}

  defp checked_array_header(n, _rest) when n > @max_array, do: {:error, :limit_exceeded}
  defp checked_array_header(n, rest), do: {:ok, n, rest}

  @doc """
  The number of pairs a map at the front of the binary declares, or nil when
  no map header is there. With the decoded map's size it tells whether a key
  repeated.
  """
  @spec declared_map_size(binary) :: non_neg_integer | nil
  def declared_map_size(<<0b1000::4, n::4, _::binary>>), do: n
  def declared_map_size(<<0xDE, n::16, _::binary>>), do: n
  def declared_map_size(<<0xDF, n::32, _::binary>>), do: n
  def declared_map_size(_other), do: nil

  # nil, booleans
  defp value(<<0xC0, rest::binary>>, _depth), do: {:ok, nil, rest}
  defp value(<<0xC2, rest::binary>>, _depth), do: {:ok, false, rest}
  defp value(<<0xC3, rest::binary>>, _depth), do: {:ok, true, rest}

  # integers
  defp value(<<0::1, n::7, rest::binary>>, _depth), do: {:ok, n, rest}
  defp value(<<0b111::3, n::5, rest::binary>>, _depth), do: {:ok, n - 32, rest}
  defp value(<<0xCC, n::8, rest::binary>>, _depth), do: {:ok, n, rest}
  defp value(<<0xCD, n::16, rest::binary>>, _depth), do: {:ok, n, rest}
  defp value(<<0xCE, n::32, rest::binary>>, _depth), do: {:ok, n, rest}
  defp value(<<0xCF, n::64, rest::binary>>, _depth), do: {:ok, n, rest}
  defp value(<<0xD0, n::signed-8, rest::binary>>, _depth), do: {:ok, n, rest}
  defp value(<<0xD1, n::signed-16, rest::binary>>, _depth), do: {:ok, n, rest}
  defp value(<<0xD2, n::signed-32, rest::binary>>, _depth), do: {:ok, n, rest}
  defp value(<<0xD3, n::signed-64, rest::binary>>, _depth), do: {:ok, n, rest}

  # floats: non-finite ones first, since a float pattern refuses them
  defp value(<<0xCA, sign::1, 0xFF::8, frac::23, rest::binary>>, _depth),
    do: {:ok, non_finite(sign, frac), rest}

  defp value(<<0xCA, f::float-32, rest::binary>>, _depth), do: {:ok, f, rest}

  defp value(<<0xCB, sign::1, 0x7FF::11, frac::52, rest::binary>>, _depth),
    do: {:ok, non_finite(sign, frac), rest}

  defp value(<<0xCB, f::float-64, rest::binary>>, _depth), do: {:ok, f, rest}

  # strings and binaries
  defp value(<<0b101::3, n::5, rest::binary>>, _depth), do: take(n, rest, & &1)
  defp value(<<0xD9, n::8, rest::binary>>, _depth), do: take(n, rest, & &1)
  defp value(<<0xDA, n::16, rest::binary>>, _depth), do: take(n, rest, & &1)
  defp value(<<0xDB, n::32, rest::binary>>, _depth), do: take(n, rest, & &1)
  defp value(<<0xC4, n::8, rest::binary>>, _depth), do: take(n, rest, &{:bin, &1})
  defp value(<<0xC5, n::16, rest::binary>>, _depth), do: take(n, rest, &{:bin, &1})
  defp value(<<0xC6, n::32, rest::binary>>, _depth), do: take(n, rest, &{:bin, &1})

  # arrays and maps
  defp value(<<0b1001::4, n::4, rest::binary>>, depth), do: array(n, rest, depth)
  defp value(<<0xDC, n::16, rest::binary>>, depth), do: array(n, rest, depth)
  defp value(<<0xDD, n::32, rest::binary>>, depth), do: array(n, rest, depth)
  defp value(<<0b1000::4, n::4, rest::binary>>, depth), do: map(n, rest, depth)
  defp value(<<0xDE, n::16, rest::binary>>, depth), do: map(n, rest, depth)
  defp value(<<0xDF, n::32, rest::binary>>, depth), do: map(n, rest, depth)

  # ext, fixext and the never-used 0xc1
  defp value(<<tag, _::binary>>, _depth)
       when tag in 0xC7..0xC9 or tag in 0xD4..0xD8 or tag == 0xC1,
       do: {:error, :unknown_type}

  # every other tag is known; reaching here means its fixed part was cut short
  defp value(_short, _depth), do: {:error, :truncated}

  defp non_finite(_sign, frac) when frac != 0, do: :nan
  defp non_finite(0, _frac), do: :infinity
  defp non_finite(1, _frac), do: :neg_infinity

  defp take(n, _rest, _wrap) when n > @max_bytes, do: {:error, :limit_exceeded}
  defp take(n, rest, _wrap) when n > byte_size(rest), do: {:error, :truncated}

  defp take(n, rest, wrap) do
    <<bytes::binary-size(n), rest::binary>> = rest
    {:ok, wrap.(bytes), rest}
  end

  # At each container the order of checks is the C++ scanner's (and so the
  # conformance vectors'): the declared size against its limit, then the
  # depth, then the elements left to right, each of which may be cut short.
  # Only elements actually present are ever built.
  defp array(n, _rest, _depth) when n > @max_array, do: {:error, :limit_exceeded}
  defp array(_n, _rest, depth) when depth >= @max_depth, do: {:error, :too_deep}
  defp array(n, rest, depth), do: elements(n, rest, depth + 1, [])

  defp elements(0, rest, _depth, acc), do: {:ok, :lists.reverse(acc), rest}

  defp elements(n, bytes, depth, acc) do
    case value(bytes, depth) do
      {:ok, term, rest} -> elements(n - 1, rest, depth, [term | acc])
      error -> error
    end
  end

  defp map(n, _rest, _depth) when n > @max_map, do: {:error, :limit_exceeded}
  defp map(_n, _rest, depth) when depth >= @max_depth, do: {:error, :too_deep}
  defp map(n, rest, depth), do: pairs(n, rest, depth + 1, [])

  defp pairs(0, rest, _depth, acc), do: {:ok, :maps.from_list(:lists.reverse(acc)), rest}

  defp pairs(n, bytes, depth, acc) do
    with {:ok, key, rest} <- value(bytes, depth),
         {:ok, val, rest} <- value(rest, depth) do
      pairs(n - 1, rest, depth, [{key, val} | acc])
    end
  end
end
