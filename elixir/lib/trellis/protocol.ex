defmodule Trellis.Protocol do
  @moduledoc false

  # The four messages of spec/protocol.md section 3, as plain terms:
  #
  #   {:request, call_id, op, args, timeout_ms | nil}
  #   {:reply, call_id, {:ok, value}}
  #   {:reply, call_id, {:error, error}}   error: %{code:, message:, sqlstate:, detail:, hint:}
  #   {:cancel, call_id}
  #   {:event, kind, payload}
  #
  # Pure functions: bytes in, terms out and back. The owner process uses
  # `route/1` to find a reply's caller without decoding the reply; the caller
  # decodes its own reply with `decode_message/1`.

  alias Trellis.Protocol.Msgpack

  @request 0
  @reply 1
  @cancel 2
  @event 3

  @max_call_id 0x7FFF_FFFF_FFFF_FFFF
  @error_keys [:code, :message, :sqlstate, :detail, :hint]
  @optional_error_keys [:sqlstate, :detail, :hint]

  defguardp is_call_id(id) when is_integer(id) and id >= 0 and id <= @max_call_id

  @type call_id :: non_neg_integer
  @type error :: %{
          code: String.t(),
          message: String.t(),
          sqlstate: String.t() | nil,
          detail: String.t() | nil,
          hint: String.t() | nil
        }
  @type message ::
          {:request, call_id, String.t(), map, pos_integer | nil}
          | {:reply, call_id, {:ok, Msgpack.value()} | {:error, error}}
          | {:cancel, call_id}
          | {:event, String.t(), map}
  @type error_class :: Msgpack.error_class() | :bad_shape | :unknown_message_type

  @doc "The major protocol version this package speaks."
  def major_version, do: 1

  @doc "The largest call id the spec allows (below 2^63)."
  def max_call_id, do: @max_call_id

  ## Encoding

  @spec encode_request(call_id, String.t(), map, pos_integer | nil) :: iodata
  def encode_request(call_id, op, args, timeout_ms \\ nil),
    do: encode_message({:request, call_id, op, args, timeout_ms})

  @spec encode_cancel(call_id) :: iodata
  def encode_cancel(call_id), do: encode_message({:cancel, call_id})

  @doc "Encodes any message; the inverse of `decode_message/1`."
  @spec encode_message(message) :: iodata
  def encode_message({:request, call_id, op, args, nil})
      when is_call_id(call_id) and is_binary(op) and (is_map(args) or is_tuple(args)),
      do: Msgpack.encode([@request, call_id, op, args])

  def encode_message({:request, call_id, op, args, timeout_ms})
      when is_call_id(call_id) and is_binary(op) and (is_map(args) or is_tuple(args)) and
             is_integer(timeout_ms) and timeout_ms > 0,
      do: Msgpack.encode([@request, call_id, op, args, timeout_ms])

  def encode_message({:reply, call_id, {:ok, value}}) when is_call_id(call_id),
    do: Msgpack.encode([@reply, call_id, "ok", value])

  def encode_message({:reply, call_id, {:error, %{code: code, message: message} = error}})
      when is_call_id(call_id) and is_binary(code) and is_binary(message) do
    pairs =
      for key <- @error_keys,
          (value = Map.get(error, key)) != nil,
          do: {Atom.to_string(key), value}

    Msgpack.encode([@reply, call_id, "error", {:map, pairs}])
  end

  def encode_message({:cancel, call_id}) when is_call_id(call_id),
    do: Msgpack.encode([@cancel, call_id])

  def encode_message({:event, kind, payload})
      when is_binary(kind) and (is_map(payload) or is_tuple(payload)),
      do: Msgpack.encode([@event, kind, payload])

  def encode_message(other), do: raise(ArgumentError, "not a protocol message: #{inspect(other)}")

  ## Decoding

  @doc """
  Decodes a frame body into a message. The checks and their order are the C++
  side's (protocol/src/message.cc): codec errors first, then the shape. The
  maps a message itself carries (request args, event payload, error) must have
  distinct string keys; maps nested inside them are plain values.
  """
  @spec decode_message(binary) :: {:ok, message} | {:error, error_class}
  def decode_message(body) when is_binary(body) do
    case Msgpack.decode_array_header(body) do
      {:ok, count, rest} ->
        with {:ok, elements} <- elements(count, rest, []), do: shape(elements)

      {:error, :not_array} ->
        with {:ok, _value} <- Msgpack.decode(body), do: {:error, :bad_shape}

      {:error, _class} = error ->
        error
    end
  end

  # The top-level elements, each with the pair count its bytes declared when
  # it is a map (a decoded map smaller than that had a repeated key).
  defp elements(0, <<>>, acc), do: {:ok, Enum.reverse(acc)}
  defp elements(0, _rest, _acc), do: {:error, :trailing_bytes}

  defp elements(n, bytes, acc) do
    case Msgpack.decode_prefix(bytes, 1) do
      {:ok, term, rest} -> elements(n - 1, rest, [{term, Msgpack.declared_map_size(bytes)} | acc])
      {:error, _class} = error -> error
    end
  end

  defp shape([{type, _} | fields]) when is_integer(type) do
    if type in @request..@event, do: shape(type, fields), else: {:error, :unknown_message_type}
  end

  defp shape(_elements), do: {:error, :bad_shape}

  defp shape(@request, [{id, _}, {op, _}, args | timeout])
       when is_call_id(id) and is_binary(op) do
    with {:ok, args} <- string_keyed_map(args),
         {:ok, timeout_ms} <- timeout(timeout) do
      {:ok, {:request, id, op, args, timeout_ms}}
    end
  end

  defp shape(@reply, [{id, _}, {"ok", _}, {value, _}]) when is_call_id(id),
    do: {:ok, {:reply, id, {:ok, value}}}

  defp shape(@reply, [{id, _}, {"error", _}, error]) when is_call_id(id) do
    with {:ok, wire} <- string_keyed_map(error),
         {:ok, error} <- error_map(wire) do
      {:ok, {:reply, id, {:error, error}}}
    end
  end

  defp shape(@cancel, [{id, _}]) when is_call_id(id), do: {:ok, {:cancel, id}}

  defp shape(@event, [{kind, _}, payload]) when is_binary(kind) do
    with {:ok, payload} <- string_keyed_map(payload), do: {:ok, {:event, kind, payload}}
  end

  defp shape(_type, _fields), do: {:error, :bad_shape}

  defp timeout([]), do: {:ok, nil}

  defp timeout([{ms, _}]) when is_integer(ms) and ms > 0 and ms <= 0xFFFF_FFFF_FFFF_FFFF,
    do: {:ok, ms}

  defp timeout(_other), do: {:error, :bad_shape}

  defp string_keyed_map({map, declared}) when is_map(map) and map_size(map) == declared do
    if Enum.all?(Map.keys(map), &is_binary/1), do: {:ok, map}, else: {:error, :bad_shape}
  end

  defp string_keyed_map(_other), do: {:error, :bad_shape}

  # Unknown keys are ignored (spec section 7); a known key of the wrong type
  # (nil included) is a wrong shape.
  defp error_map(%{"code" => code, "message" => message} = wire)
       when is_binary(code) and is_binary(message) do
    Enum.reduce_while(@optional_error_keys, {:ok, %{code: code, message: message}}, fn key, acc ->
      case Map.fetch(wire, Atom.to_string(key)) do
        :error -> {:cont, put_field(acc, key, nil)}
        {:ok, text} when is_binary(text) -> {:cont, put_field(acc, key, text)}
        {:ok, _other} -> {:halt, {:error, :bad_shape}}
      end
    end)
  end

  defp error_map(_wire), do: {:error, :bad_shape}

  defp put_field({:ok, error}, key, value), do: {:ok, Map.put(error, key, value)}

  @doc """
  The call id of a message-like body, read without decoding the rest: the
  body must start with an array header declaring at least two elements, the
  first of which is any complete value and the second a valid call id. A
  body that fails to decode further on (truncated, too deep, over a limit, of
  a wrong shape) still has one: the port answers it with an error reply
  (spec section 5). Same rule as the C++ `PeekCallId`.
  """
  @spec call_id_of(binary) :: {:ok, call_id} | :error
  def call_id_of(body) when is_binary(body) do
    case head(body) do
      {:ok, _type, id} -> {:ok, id}
      :error -> :error
    end
  end

  @doc """
  What the owner needs to route a frame: `{:reply, call_id}` for a reply
  (whose body is handed to the caller undecoded), `:other` for anything else.
  """
  @spec route(binary) :: {:reply, call_id} | :other
  def route(body) when is_binary(body) do
    case head(body) do
      {:ok, @reply, id} -> {:reply, id}
      _other -> :other
    end
  end

  @doc """
  True for a frame that is a `log` event (`[3, "log", payload]`), by its
  first bytes: the owner hands those on without decoding them, so a flood
  of log lines costs it next to nothing. The port's encoder writes exactly
  these bytes (section 2, "Canonical encoding").
  """
  @spec log_frame?(binary) :: boolean
  def log_frame?(<<0x93, @event, 0xA3, "log", _payload::binary>>), do: true
  def log_frame?(_body), do: false

  defp head(body) do
    with {:ok, count, rest} when count >= 2 <- Msgpack.decode_array_header(body),
         {:ok, type, rest} <- Msgpack.decode_prefix(rest, 1),
         {:ok, id, _rest} when is_call_id(id) <- Msgpack.decode_prefix(rest) do
      {:ok, type, id}
    else
      _ -> :error
    end
  end
end
