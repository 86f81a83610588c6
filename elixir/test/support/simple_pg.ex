defmodule Trellis.Test.SimplePG do
  @moduledoc false

  # A minimal PostgreSQL client for the test suite and the demo: the simple
  # query protocol over TCP with trust authentication (what trellis-testkit
  # sets up), results as text. The suite writes source rows and reads targets
  # with it, independently of Trellis: no mock, no shared code path.

  defstruct [:socket, :url]

  @type t :: %__MODULE__{socket: :gen_tcp.socket(), url: String.t()}

  @doc "Connects to a postgresql:// URL (user, host, port, database)."
  @spec connect!(String.t()) :: t
  def connect!(url) do
    uri = URI.parse(url)
    user = (uri.userinfo || "postgres") |> String.split(":") |> hd()
    database = String.trim_leading(uri.path || "/postgres", "/")
    host = String.to_charlist(uri.host || "127.0.0.1")
    host = if host == ~c"localhost", do: ~c"127.0.0.1", else: host

    {:ok, socket} =
      :gen_tcp.connect(host, uri.port || 5432, [:binary, active: false, packet: :raw], 10_000)

    params = "user\0#{user}\0database\0#{database}\0application_name\0trellis_test\0\0"
    body = <<3::16, 0::16>> <> params
    :ok = :gen_tcp.send(socket, <<byte_size(body) + 4::32>> <> body)
    conn = %__MODULE__{socket: socket, url: url}
    {:ok, _} = read_until_ready(conn, [])
    conn
  end

  @doc "Closes the connection."
  @spec close(t) :: :ok
  def close(%__MODULE__{socket: socket}) do
    :gen_tcp.send(socket, <<?X, 4::32>>)
    :gen_tcp.close(socket)
  end

  @doc """
  Runs one or more statements. Returns `{:ok, rows}` with the rows of the
  last result (lists of binaries or nil), or `{:error, message}`.
  """
  @spec query(t, String.t()) :: {:ok, [[binary | nil]]} | {:error, String.t()}
  def query(%__MODULE__{socket: socket} = conn, sql) do
    body = sql <> <<0>>
    :ok = :gen_tcp.send(socket, <<?Q, byte_size(body) + 4::32>> <> body)
    read_until_ready(conn, [])
  end

  @doc "Like `query/2`, raising on a database error."
  @spec query!(t, String.t()) :: [[binary | nil]]
  def query!(conn, sql) do
    case query(conn, sql) do
      {:ok, rows} -> rows
      {:error, message} -> raise "SQL failed: #{message}\n  #{sql}"
    end
  end

  @doc "The single value of a one-row, one-column query."
  @spec scalar!(t, String.t()) :: binary | nil
  def scalar!(conn, sql) do
    [[value]] = query!(conn, sql)
    value
  end

  defp read_until_ready(conn, rows, error \\ nil) do
    {type, payload} = read_message(conn.socket)

    case type do
      ?Z -> if error, do: {:error, error}, else: {:ok, Enum.reverse(rows)}
      ?T -> read_until_ready(conn, [], error)
      ?D -> read_until_ready(conn, [decode_row(payload) | rows], error)
      ?E -> read_until_ready(conn, rows, error_message(payload))
      ?R -> auth(conn, payload, rows, error)
      _other -> read_until_ready(conn, rows, error)
    end
  end

  defp auth(conn, <<0::32>>, rows, error), do: read_until_ready(conn, rows, error)

  defp auth(_conn, <<code::32, _::binary>>, _rows, _error),
    do: raise("SimplePG supports trust authentication only (server asked for method #{code})")

  defp read_message(socket) do
    {:ok, <<type, length::32>>} = :gen_tcp.recv(socket, 5, 60_000)

    payload =
      if length > 4 do
        {:ok, data} = :gen_tcp.recv(socket, length - 4, 60_000)
        data
      else
        <<>>
      end

    {type, payload}
  end

  defp decode_row(<<count::16, rest::binary>>), do: decode_columns(count, rest, [])

  defp decode_columns(0, _rest, acc), do: Enum.reverse(acc)

  defp decode_columns(n, <<-1::signed-32, rest::binary>>, acc),
    do: decode_columns(n - 1, rest, [nil | acc])

  defp decode_columns(n, <<len::32, value::binary-size(len), rest::binary>>, acc),
    do: decode_columns(n - 1, rest, [value | acc])

  defp error_message(payload) do
    fields =
      for field <- String.split(payload, <<0>>, trim: true), into: %{} do
        <<code, text::binary>> = field
        {code, text}
      end

    "#{fields[?S]} #{fields[?C]}: #{fields[?M]}"
  end
end
