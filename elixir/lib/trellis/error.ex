defmodule Trellis.Error do
  @moduledoc """
  The error every `Trellis` function returns (as `{:error, %Trellis.Error{}}`)
  and every bang variant raises.

  Match on `:code`, one of a closed set of atoms:

    * `:validation` - the request is wrong: a bad statement, argument or
      option, or a handle that was shut down
    * `:not_found` - the named transform, column, key or job does not exist
    * `:already_exists` - a transform or target table of that name exists
    * `:not_migrated` - the catalog schema is missing or older than this
      engine: run `migrate/1`
    * `:unsupported` - a valid form this engine does not execute yet
    * `:timeout` - the call's budget ran out
    * `:connection` - the database could not be reached, a connection broke,
      or the port program exited
    * `:database` - the database refused the work (`:sqlstate` says why)
    * `:protocol` - a frame or message between the BEAM and the port program
      could not be understood
    * `:internal` - a bug in Trellis
    * `:unknown` - a code newer than this package; the message names it

  `:message` is a sentence for people. `:sqlstate`, `:detail` and `:hint` are
  set when PostgreSQL gave them, and are `nil` otherwise.

      case Trellis.ping(trellis) do
        :ok -> :ok
        {:error, %Trellis.Error{code: :timeout}} -> :retry_later
        {:error, error} -> raise error
      end
  """

  @codes [
    :validation,
    :not_found,
    :already_exists,
    :not_migrated,
    :unsupported,
    :timeout,
    :connection,
    :database,
    :protocol,
    :internal
  ]

  @type code ::
          :validation
          | :not_found
          | :already_exists
          | :not_migrated
          | :unsupported
          | :timeout
          | :connection
          | :database
          | :protocol
          | :internal
          | :unknown

  @type t :: %__MODULE__{
          code: code,
          message: String.t(),
          sqlstate: String.t() | nil,
          detail: String.t() | nil,
          hint: String.t() | nil
        }

  defexception code: :internal, message: "", sqlstate: nil, detail: nil, hint: nil

  @doc """
  The error as one readable text: the code in parentheses, the message, then
  the SQLSTATE, detail and hint when present.

  ## Example

      iex> Exception.message(%Trellis.Error{code: :timeout, message: "the call ran out of time"})
      "(timeout) the call ran out of time"
  """
  @impl true
  @spec message(t) :: String.t()
  def message(%__MODULE__{} = error) do
    extras =
      for {label, value} <- [sqlstate: error.sqlstate, detail: error.detail, hint: error.hint],
          value != nil,
          do: "\n  #{label}: #{value}"

    IO.iodata_to_binary(["(", Atom.to_string(error.code), ") ", error.message | extras])
  end

  @doc false
  @spec codes() :: [code]
  def codes, do: @codes

  @doc false
  @spec new(code, String.t()) :: t
  def new(code, message) when code in @codes or code == :unknown,
    do: %__MODULE__{code: code, message: message}

  @doc false
  # An error reply as Trellis.Protocol decodes it. The code string maps to a
  # compiled-in atom; a newer code becomes :unknown, and its text is kept in
  # the message.
  @spec from_wire(Trellis.Protocol.error()) :: t
  def from_wire(%{code: code, message: message} = wire) do
    {code, message} =
      case code_atom(code) do
        :unknown -> {:unknown, "#{code}: #{message}"}
        atom -> {atom, message}
      end

    %__MODULE__{
      code: code,
      message: message,
      sqlstate: Map.get(wire, :sqlstate),
      detail: Map.get(wire, :detail),
      hint: Map.get(wire, :hint)
    }
  end

  @doc false
  @spec code_atom(String.t()) :: code
  for code <- @codes do
    def code_atom(unquote(Atom.to_string(code))), do: unquote(code)
  end

  def code_atom(_other), do: :unknown
end
