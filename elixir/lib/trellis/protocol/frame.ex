defmodule Trellis.Protocol.Frame do
  @moduledoc false

  # Framing of spec/protocol.md section 1: a 4-byte big-endian body length,
  # then the body. The live port uses Erlang's `{packet, 4}`, which does the
  # same; these functions serve whatever reads a byte stream itself (capture
  # files, the conformance runner). Pure: no I/O.

  @max_body_bytes 16 * 1024 * 1024

  @doc "The largest frame body either side accepts: 16 MiB."
  @spec max_body_bytes() :: pos_integer
  def max_body_bytes, do: @max_body_bytes

  @doc "Prefixes a body with its length. Raises ArgumentError over the maximum."
  @spec encode(iodata) :: iodata
  def encode(body) do
    size = IO.iodata_length(body)

    if size > @max_body_bytes do
      raise ArgumentError, "a frame body of #{size} bytes is over the #{@max_body_bytes} limit"
    end

    [<<size::32>>, body]
  end

  @doc """
  Takes the first complete frame off the buffer.

  `:more` means the buffer holds no complete frame yet. `{:error,
  :oversize_frame}` comes as soon as a length prefix over the maximum is
  readable: framing is lost and nothing after it can be trusted.
  """
  @spec next(binary) :: {:ok, binary, binary} | :more | {:error, :oversize_frame}
  def next(<<size::32, _::binary>>) when size > @max_body_bytes, do: {:error, :oversize_frame}

  def next(<<size::32, body::binary-size(size), rest::binary>>), do: {:ok, body, rest}

  def next(buffer) when is_binary(buffer), do: :more

  @doc """
  Splits a buffer into every complete frame body it holds, in order, and the
  bytes left over (the start of a frame still to come). When a length prefix
  over the maximum turns up, the frames before it are still returned, with
  the error instead of the rest: nothing after it can be framed.
  """
  @spec split(binary) :: {:ok, [binary], binary} | {:error, :oversize_frame, [binary]}
  def split(buffer) when is_binary(buffer), do: split(buffer, [])

  defp split(buffer, acc) do
    case next(buffer) do
      {:ok, body, rest} -> split(rest, [body | acc])
      :more -> {:ok, Enum.reverse(acc), buffer}
      {:error, :oversize_frame} -> {:error, :oversize_frame, Enum.reverse(acc)}
    end
  end
end
