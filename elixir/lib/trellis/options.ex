defmodule Trellis.Options do
  @moduledoc """
  The options of `Trellis.connect/1` and `Trellis.start_link/1`, checked in
  one place, once, before anything starts.

  Two kinds of mistakes, two outcomes (the same rule as every function of
  `Trellis`):

    * a wrong **type** (not a keyword list, an unknown option, `pool_size:
      "10"`, `staging: 1`) is a bug in the calling code: it raises
      `ArgumentError`, as Elixir's own functions do;
    * a wrong **value** of the right type (`pool_size: 0`, `schema: ""`,
      `drain_threads: 101`) is returned as `{:error, %Trellis.Error{code:
      :validation}}`, which a caller can show to whoever configured it.

  Either way the message names the option. Values are never shown for
  `:url`, which may carry a password.

  One option has an application-wide default: `config :trellis_pg,
  capture: :logical` (or `:auto`) makes it the `:capture` of every handle
  that does not pass its own, so a release can choose its capture mode in
  `config/runtime.exs` (default `:triggers`). It is checked like the option.

  The ranges are the port program's own (`spec/protocol.md`, op `connect`),
  so a value accepted here is never refused later.
  """

  alias Trellis.Error

  # {option, type check, the type in words, value check or nil, the value in
  # words, default}. :url has no default: it is required.
  @schema [
    {:url, &is_binary/1, "a string (a PostgreSQL URL)", &__MODULE__.non_empty?/1,
     "a non-empty string", :required},
    {:schema, &is_binary/1, "a string", &__MODULE__.non_empty?/1, "a non-empty string",
     "trellis"},
    {:pool_size, &is_integer/1, "an integer", &__MODULE__.in_1_100?/1, "in 1..100", 10},
    {:staging, &is_boolean/1, "a boolean", nil, nil, false},
    {:drain_threads, &is_integer/1, "an integer", &__MODULE__.in_0_100?/1, "in 0..100", 0},
    {:record, &is_binary/1, "a file path (a string)", &__MODULE__.non_empty?/1, "not empty", nil},
    {:timeout_ms, &is_integer/1, "an integer", &__MODULE__.positive?/1,
     "a positive number of milliseconds", 30_000},
    {:application_name, &is_binary/1, "a string", nil, nil, nil},
    {:capture, &is_atom/1, "an atom", &__MODULE__.capture_mode?/1,
     "one of :triggers, :logical or :auto", :triggers}
  ]

  @keys Enum.map(@schema, &elem(&1, 0))
  @capture_modes [:triggers, :logical, :auto]

  @typedoc "Options after validation: every key present, defaults filled in."
  @type t :: keyword

  @doc """
  Checks `opts` for `function` (`:connect` or `:start_link`) and returns
  them complete, with defaults, plus `:name` (nil for `connect/1`).

  Raises `ArgumentError` for a wrong type or an unknown option; returns
  `{:error, %Trellis.Error{code: :validation}}` for a bad value.

  ## Example

      {:ok, opts} = Trellis.Options.validate(:connect, url: "postgres://localhost/app")
      10 = opts[:pool_size]
  """
  @spec validate(:connect | :start_link, term) :: {:ok, t} | {:error, Error.t()}
  def validate(function, opts) do
    unless Keyword.keyword?(opts) do
      raise ArgumentError,
            "Trellis.#{function}/1 expects a keyword list of options, got: #{inspect(opts)}"
    end

    {name, opts} = Keyword.pop(opts, :name)
    check_name!(name, function)
    check_known!(opts, function)
    opts = with_configured_capture(opts)

    Enum.reduce_while(@schema, {:ok, [name: name]}, fn option, {:ok, acc} ->
      case fetch(opts, option) do
        {:ok, value} -> {:cont, {:ok, [{elem(option, 0), value} | acc]}}
        {:error, _} = error -> {:halt, error}
      end
    end)
  end

  @doc "The option names `connect/1` takes."
  @spec keys() :: [atom]
  def keys, do: @keys

  @doc false
  # Trellis.config/1: the options as the port program holds them (the `config`
  # op; the URL's password redacted), keyed by option, plus the handle's own
  # :timeout_ms, which the port program does not keep. Keys this package does
  # not know are left out: no atom is made from the wire.
  @spec from_wire(map, pos_integer) :: map
  def from_wire(wire, timeout_ms) when is_map(wire) do
    for {key, value} <- wire,
        option = wire_key(key),
        into: %{timeout_ms: timeout_ms},
        do: {option, wire_value(option, value)}
  end

  for key <- @keys, key != :timeout_ms do
    defp wire_key(unquote(Atom.to_string(key))), do: unquote(key)
  end

  defp wire_key(_unknown), do: nil

  # :capture travels as its name; no atom is made from the wire.
  defp wire_value(:capture, value) when is_binary(value) do
    Enum.find(@capture_modes, value, &(Atom.to_string(&1) == value))
  end

  defp wire_value(_option, value), do: value

  defp fetch(opts, {key, type?, type, value?, value_words, default}) do
    case Keyword.fetch(opts, key) do
      :error when default == :required ->
        raise ArgumentError, "option #{inspect(key)} is required"

      :error ->
        {:ok, default}

      {:ok, nil} when default != :required ->
        {:ok, default}

      {:ok, value} ->
        type?.(value) ||
          raise ArgumentError, "option #{inspect(key)} must be #{type}#{got(key, value)}"

        if value? == nil or value?.(value),
          do: {:ok, value},
          else:
            {:error,
             Error.new(
               :validation,
               "option #{inspect(key)} must be #{value_words}#{got(key, value)}"
             )}
    end
  end

  # The application's default capture mode, when the caller gave none.
  defp with_configured_capture(opts) do
    case Application.get_env(:trellis_pg, :capture) do
      nil ->
        opts

      mode ->
        if Keyword.get(opts, :capture) == nil, do: Keyword.put(opts, :capture, mode), else: opts
    end
  end

  # The URL may hold a password: its value is never repeated.
  defp got(:url, _value), do: ""
  defp got(_key, value), do: ", got: #{inspect(value)}"

  defp check_known!(opts, function) do
    case Enum.reject(Keyword.keys(opts), &(&1 in @keys)) do
      [] ->
        :ok

      unknown ->
        known = if function == :start_link, do: [:name | @keys], else: @keys

        raise ArgumentError,
              "unknown option(s) #{inspect(unknown)} for Trellis.#{function}/1; " <>
                "known options: #{inspect(known)}"
    end
  end

  defp check_name!(nil, :start_link),
    do: raise(ArgumentError, "Trellis.start_link/1 needs a :name (an atom) for the handle")

  defp check_name!(name, :start_link) when is_atom(name) and name not in [true, false], do: :ok

  defp check_name!(name, :start_link),
    do: raise(ArgumentError, "option :name must be an atom, got: #{inspect(name)}")

  defp check_name!(nil, :connect), do: :ok

  defp check_name!(_name, :connect),
    do:
      raise(
        ArgumentError,
        "option :name is for start_link/1; connect/1 returns the handle itself"
      )

  @doc false
  def non_empty?(value), do: value != ""
  @doc false
  def in_1_100?(value), do: value in 1..100
  @doc false
  def in_0_100?(value), do: value in 0..100
  @doc false
  def positive?(value), do: value > 0
  @doc false
  def capture_mode?(value), do: value in @capture_modes
end
