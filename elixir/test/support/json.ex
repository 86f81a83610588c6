defmodule Trellis.Test.JSON do
  @moduledoc false

  # A small, strict JSON decoder for the conformance vectors (Elixir 1.14 and
  # OTP 25 ship none, and the package takes no dependencies). Objects become
  # maps with string keys, arrays lists, numbers integers or floats.

  @spec decode!(binary) :: term
  def decode!(text) when is_binary(text) do
    {value, rest} = value(skip_ws(text))

    case skip_ws(rest) do
      "" ->
        value

      extra ->
        raise ArgumentError,
              "JSON: unexpected trailing text #{inspect(String.slice(extra, 0, 20))}"
    end
  end

  defp value("{" <> rest), do: object(skip_ws(rest), %{})
  defp value("[" <> rest), do: array(skip_ws(rest), [])
  defp value("\"" <> rest), do: string(rest, [])
  defp value("true" <> rest), do: {true, rest}
  defp value("false" <> rest), do: {false, rest}
  defp value("null" <> rest), do: {nil, rest}
  defp value(<<c, _::binary>> = text) when c == ?- or c in ?0..?9, do: number(text)
  defp value(text), do: fail("a value", text)

  defp object("}" <> rest, acc), do: {acc, rest}

  defp object("\"" <> rest, acc) do
    {key, rest} = string(rest, [])

    case skip_ws(rest) do
      ":" <> rest ->
        {val, rest} = value(skip_ws(rest))
        acc = Map.put(acc, key, val)

        case skip_ws(rest) do
          "," <> rest -> object(skip_ws(rest), acc)
          "}" <> rest -> {acc, rest}
          other -> fail("',' or '}'", other)
        end

      other ->
        fail("':'", other)
    end
  end

  defp object(text, _acc), do: fail("a key or '}'", text)

  defp array("]" <> rest, acc), do: {Enum.reverse(acc), rest}

  defp array(text, acc) do
    {val, rest} = value(text)

    case skip_ws(rest) do
      "," <> rest -> array(skip_ws(rest), [val | acc])
      "]" <> rest -> {Enum.reverse([val | acc]), rest}
      other -> fail("',' or ']'", other)
    end
  end

  defp string("\"" <> rest, acc), do: {IO.iodata_to_binary(Enum.reverse(acc)), rest}

  defp string("\\" <> <<c, rest::binary>>, acc) when c in ~c(\"\\/bfnrt) do
    char = %{
      ?" => ?",
      ?\\ => ?\\,
      ?/ => ?/,
      ?b => ?\b,
      ?f => ?\f,
      ?n => ?\n,
      ?r => ?\r,
      ?t => ?\t
    }

    string(rest, [char[c] | acc])
  end

  defp string("\\u" <> <<hex::binary-size(4), rest::binary>>, acc) do
    case {String.to_integer(hex, 16), rest} do
      {high, "\\u" <> <<low_hex::binary-size(4), rest::binary>>} when high in 0xD800..0xDBFF ->
        low = String.to_integer(low_hex, 16)
        code = 0x10000 + Bitwise.bsl(high - 0xD800, 10) + (low - 0xDC00)
        string(rest, [<<code::utf8>> | acc])

      {code, rest} ->
        string(rest, [<<code::utf8>> | acc])
    end
  end

  defp string(<<c, rest::binary>>, acc) when c >= 0x20 and c != ?\\, do: string(rest, [c | acc])
  defp string(text, _acc), do: fail("a string character", text)

  defp number(text) do
    [token | _groups] = Regex.run(~r/\A-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?/, text)
    rest = binary_part(text, byte_size(token), byte_size(text) - byte_size(token))

    if String.contains?(token, [".", "e", "E"]) do
      {float_of(token), rest}
    else
      {String.to_integer(token), rest}
    end
  end

  # Elixir's float parser wants a fraction before an exponent: "1e5" -> "1.0e5".
  defp float_of(token) do
    token = Regex.replace(~r/\A(-?[0-9]+)([eE])/, token, "\\1.0\\2")
    String.to_float(token)
  end

  defp skip_ws(<<c, rest::binary>>) when c in [?\s, ?\t, ?\n, ?\r], do: skip_ws(rest)
  defp skip_ws(text), do: text

  defp fail(expected, text) do
    raise ArgumentError, "JSON: expected #{expected} at #{inspect(String.slice(text, 0, 20))}"
  end
end
