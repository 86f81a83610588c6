defmodule Trellis.Events do
  @moduledoc false

  # Where the events a port program sends (spec section 3: `[3, kind,
  # payload]`) go, other than the hello the owner reads itself and the `log`
  # events it hands to Trellis.LogBridge undecoded. The owner calls
  # `dispatch/4` for each, in the owner process, so a handler must be quick
  # and must not call the handle.
  #
  # The handler is `{module, function}`, called as
  # `module.function(kind, payload, metadata)` with `metadata.instance` the
  # handle's "<database>/<schema>" (nil before connect finished). It comes
  # from `config :trellis_pg, :event_handler`, read when a handle starts;
  # the default is `{Trellis.Events, :default}`.

  require Logger

  @type handler :: {module, atom}

  @spec handler() :: handler
  def handler, do: Application.get_env(:trellis_pg, :event_handler, {__MODULE__, :default})

  @doc "Runs the handler; a handler that raises is logged, never fatal to the handle."
  @spec dispatch(handler, String.t(), map, map) :: :ok
  def dispatch({module, function}, kind, payload, metadata) do
    apply(module, function, [kind, payload, metadata])
    :ok
  rescue
    error ->
      Logger.error("Trellis event handler failed on a #{kind} event: #{Exception.message(error)}")
      :ok
  end

  @doc """
  The default handler: an `error` event (the port could not read a frame) is
  logged as an error; other kinds are left to the handlers that know them.
  """
  @spec default(String.t(), map, map) :: :ok
  def default("error", payload, metadata) do
    Logger.error(
      "trellis-port (#{metadata.instance}): #{payload["code"]}: #{payload["message"]}",
      domain: [:trellis]
    )
  end

  def default(_kind, _payload, _metadata), do: :ok
end
