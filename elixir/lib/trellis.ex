defmodule Trellis do
  @moduledoc """
  Derived tables kept up to date inside your own PostgreSQL database.

  A handle is the connection between this VM and one Trellis instance (a
  database plus a catalog schema). Each handle runs its own `trellis-port`
  program, an operating-system process started as an Erlang port, which holds
  the database connections and the background workers. A crash in it can
  never take the VM down: calls waiting on it get an error instead.

      {:ok, trellis} = Trellis.connect(url: "postgres://localhost/app")
      {:ok, %{instance: "app/trellis"}} = Trellis.server_info(trellis)
      :ok = Trellis.shutdown(trellis)

  ## Calls

  Every function that takes a handle runs in the calling process and waits
  for its reply in a `receive`: calls from different processes run in
  parallel and never queue behind each other. Each call has a budget
  (`:timeout_ms`, 30 s by default); a call that runs out of it returns
  `{:error, %Trellis.Error{code: :timeout}}` and the port program stops the
  work it started. A process killed during a call leaves nothing behind: the
  call is cancelled within a fraction of a second.

  Non-bang functions return `{:ok, value}` (or `:ok`) or
  `{:error, %Trellis.Error{}}`; bang variants return the value or raise the
  error. A wrong argument (an unknown option, a value of the wrong type)
  raises `ArgumentError` at once.

  ## Handles in a supervision tree

  `{Trellis, options}` starts a process that connects as it starts and
  registers the handle under `options[:name]`; the name then stands in for
  the handle in every function:

      children = [
        {Trellis, name: MyApp.Trellis, url: database_url, staging: true, drain_threads: 2}
      ]

      {:ok, info} = Trellis.server_info(MyApp.Trellis)

  The supervisor restarts the handle if its port program dies. A handle works
  only on the node that connected it.

  ## Logs and metrics

  The port program's log lines reach `Logger` through `Trellis.LogBridge`
  (domain `[:trellis]`), and `Trellis.Metrics.render_prometheus/0` renders
  the metrics of every live handle in this VM for a `/metrics` route the
  host already serves.

  ## Handles from `connect/1`

  A handle from `connect/1` belongs to the process that called it: it shuts
  down when that process exits, or when `shutdown/1` is called.
  """

  import Kernel, except: [apply: 2]

  alias Trellis.{Call, Error, HandleState}

  @enforce_keys [:owner, :port, :table, :state, :timeout_ms]
  defstruct [
    :owner,
    :port,
    :table,
    :state,
    :timeout_ms,
    :name,
    :instance,
    :protocol_version,
    :engine_version
  ]

  @typedoc "A handle: the struct `connect/1` returns."
  @type t :: %__MODULE__{
          owner: pid,
          port: port,
          table: :ets.tid(),
          state: HandleState.t(),
          timeout_ms: pos_integer,
          name: atom | nil,
          instance: String.t() | nil,
          protocol_version: {non_neg_integer, non_neg_integer},
          engine_version: String.t() | nil
        }

  @typedoc "A handle, or the name a supervised handle was started under."
  @type handle :: t | atom

  @typedoc "The options of `connect/1` and `start_link/1`."
  @type option ::
          {:url, String.t()}
          | {:schema, String.t()}
          | {:pool_size, pos_integer}
          | {:staging, boolean}
          | {:drain_threads, non_neg_integer}
          | {:record, Path.t()}
          | {:timeout_ms, pos_integer}
          | {:application_name, String.t()}
          | {:name, atom}

  # {option, check, what it must be, default}; :url is required.
  @options [
    {:url, &is_binary/1, "a string (a PostgreSQL URL)", :required},
    {:schema, &__MODULE__.identifier?/1, "a non-empty string", "trellis"},
    {:pool_size, &__MODULE__.pos_integer?/1, "a positive integer", 10},
    {:staging, &is_boolean/1, "a boolean", false},
    {:drain_threads, &__MODULE__.non_neg_integer?/1, "a non-negative integer", 0},
    {:record, &__MODULE__.identifier?/1, "a file path (a string)", nil},
    {:timeout_ms, &__MODULE__.pos_integer?/1, "a positive integer", 30_000},
    {:application_name, &is_binary/1, "a string", nil}
  ]

  ## Lifecycle

  @doc """
  Starts a handle: the port program, its connection pool, and (when asked
  for) its staging worker and drain threads.

  The defaults run nothing in the background. For each instance exactly one
  handle in a fleet should set `staging: true`, and some handle must run
  drain threads, or no definition ever becomes live.

  ## Options

    * `:url` - the PostgreSQL URL, TLS settings included (required)
    * `:schema` - the catalog schema; with the database it names the
      instance, `"<database>/<schema>"` (default: `"trellis"`)
    * `:pool_size` - database connections for calls (default: `10`)
    * `:staging` - run this instance's staging worker, or stand by for it
      (default: `false`)
    * `:drain_threads` - drain workers on this handle (default: `0`)
    * `:record` - write every frame to this capture file, for
      `trellis-port decode` and `trellis-port replay` (default: no capture)
    * `:timeout_ms` - each call's budget, from when it is submitted
      (default: `30_000`)
    * `:application_name` - `application_name` of the database sessions
      (default: the port program's)

  ## Example

      {:ok, trellis} = Trellis.connect(url: "postgres://localhost/app", drain_threads: 2)
  """
  @spec connect([option]) :: {:ok, t} | {:error, Error.t()}
  def connect(opts) do
    opts = validate_options!(opts, :connect)
    spec = {Trellis.Owner, Keyword.put(opts, :caller, self())}

    case DynamicSupervisor.start_child(Trellis.HandleSupervisor, spec) do
      {:ok, owner} -> {:ok, Trellis.Owner.handle(owner)}
      {:error, {:shutdown, %Error{} = error}} -> {:error, error}
    end
  end

  @doc """
  Like `connect/1`, but returns the handle or raises `Trellis.Error`.

  ## Example

      trellis = Trellis.connect!(url: "postgres://localhost/app")
  """
  @spec connect!([option]) :: t
  def connect!(opts), do: unwrap!(connect(opts))

  @doc """
  Starts a handle owned by the calling supervisor and registered under
  `:name`, which then stands in for the handle in every function.

  ## Options

  `:name` (an atom, required) and every option of `connect/1`.

  ## Example

      {:ok, _pid} = Trellis.start_link(name: MyApp.Trellis, url: "postgres://localhost/app")
      :ok = Trellis.ping(MyApp.Trellis)
  """
  @spec start_link([option]) :: GenServer.on_start() | {:error, Error.t()}
  def start_link(opts) do
    opts = validate_options!(opts, :start_link)

    case Trellis.Owner.start_link(Keyword.put(opts, :caller, nil)) do
      {:error, {:shutdown, %Error{} = error}} -> {:error, error}
      other -> other
    end
  end

  @doc """
  The child specification behind `{Trellis, options}`: a permanent worker
  whose id is its `:name`. Takes the options of `start_link/1`.

  ## Example

      children = [{Trellis, name: MyApp.Trellis, url: "postgres://localhost/app"}]
      Supervisor.start_link(children, strategy: :one_for_one)
  """
  @spec child_spec([option]) :: Supervisor.child_spec()
  def child_spec(opts) do
    %{
      id: Keyword.get(opts, :name, __MODULE__),
      start: {__MODULE__, :start_link, [opts]},
      type: :worker,
      restart: :permanent,
      shutdown: Trellis.Owner.shutdown_grace_ms() * 2
    }
  end

  @doc """
  Shuts a handle down. Calls still in flight are cancelled, and each of their
  callers gets a `:validation` error; later calls get the same error. Shutting
  down a handle that is already closed returns `:ok`.

  A name is refused: the supervisor that started the handle stops it.

  ## Example

      :ok = Trellis.shutdown(trellis)
  """
  @spec shutdown(handle) :: :ok | {:error, Error.t()}
  def shutdown(name) when is_atom(name) do
    {:error,
     Error.new(
       :validation,
       "shutdown/1 takes a handle from connect/1, not the name #{inspect(name)}: " <>
         "the supervisor that started a named handle stops it"
     )}
  end

  def shutdown(%__MODULE__{} = handle) do
    with {:ok, handle} <- resolve(handle) do
      if HandleState.open?(handle.state), do: stop(handle), else: :ok
    end
  end

  defp stop(handle) do
    ref = Process.monitor(handle.owner)
    HandleState.mark_shutting_down(handle.state)

    case Call.call(handle, "shutdown", %{}) do
      {:ok, _} ->
        await_owner(ref, handle.owner)

      {:error, %Error{code: code}} when code in [:validation, :connection, :protocol] ->
        await_owner(ref, handle.owner)

      {:error, _} = error ->
        Process.demonitor(ref, [:flush])
        error
    end
  end

  # The port exits once it has cancelled what was in flight; if it takes
  # longer than the grace, the owner is stopped, which closes it.
  defp await_owner(ref, owner) do
    receive do
      {:DOWN, ^ref, :process, _, _} -> :ok
    after
      Trellis.Owner.shutdown_grace_ms() ->
        Process.demonitor(ref, [:flush])

        try do
          GenServer.stop(owner, :shutdown, Trellis.Owner.shutdown_grace_ms() * 2)
        catch
          :exit, _already_gone -> :ok
        end
    end
  end

  @doc """
  Like `shutdown/1`, but returns `:ok` or raises `Trellis.Error`.

  ## Example

      :ok = Trellis.shutdown!(trellis)
  """
  @spec shutdown!(handle) :: :ok
  def shutdown!(handle), do: unwrap!(shutdown(handle))

  ## Information

  @doc """
  The options the handle was started with, as the port program holds them:
  the URL's password is redacted.

  ## Example

      {:ok, %{schema: "trellis", pool_size: 10, url: "postgres://app:***@db/app"}} =
        Trellis.config(trellis)
  """
  @spec config(handle) :: {:ok, map} | {:error, Error.t()}
  def config(handle) do
    with {:ok, handle} <- resolve(handle),
         {:ok, wire} <- Call.call(handle, "config", %{}) do
      known = for {key, value} <- wire, atom = config_key(key), into: %{}, do: {atom, value}
      {:ok, Map.put(known, :timeout_ms, handle.timeout_ms)}
    end
  end

  @config_keys ~w(url schema pool_size staging drain_threads application_name record)a
  for key <- @config_keys do
    defp config_key(unquote(Atom.to_string(key))), do: unquote(key)
  end

  defp config_key(_unknown), do: nil

  @doc """
  Like `config/1`, but returns the map or raises `Trellis.Error`.

  ## Example

      %{schema: "trellis"} = Trellis.config!(trellis)
  """
  @spec config!(handle) :: map
  def config!(handle), do: unwrap!(config(handle))

  @doc """
  What the handle is connected to, read from the database:

    * `:instance` - `"<database>/<schema>"`, as in log lines and metrics
    * `:server_version` - PostgreSQL's `server_version`
    * `:engine_version` - the port program's engine version
    * `:protocol_version` - the protocol the port program speaks, `{major, minor}`

  ## Example

      {:ok, %{instance: "app/trellis", protocol_version: {1, 0}}} = Trellis.server_info(trellis)
  """
  @spec server_info(handle) ::
          {:ok,
           %{
             instance: String.t(),
             server_version: String.t(),
             engine_version: String.t(),
             protocol_version: {non_neg_integer, non_neg_integer}
           }}
          | {:error, Error.t()}
  def server_info(handle) do
    with {:ok, handle} <- resolve(handle),
         {:ok, info} <- Call.call(handle, "server_info", %{}) do
      {:ok,
       %{
         instance: info["instance"],
         server_version: info["server_version"],
         engine_version: info["engine_version"],
         protocol_version: handle.protocol_version
       }}
    end
  end

  @doc """
  Like `server_info/1`, but returns the map or raises `Trellis.Error`.

  ## Example

      %{instance: "app/trellis"} = Trellis.server_info!(trellis)
  """
  @spec server_info!(handle) :: map
  def server_info!(handle), do: unwrap!(server_info(handle))

  @doc """
  Checks that the handle's port program answers. It does no database work.

  ## Example

      :ok = Trellis.ping(trellis)
  """
  @spec ping(handle) :: :ok | {:error, Error.t()}
  def ping(handle) do
    case Call.call(handle, "ping", %{}) do
      {:ok, "pong"} -> :ok
      {:ok, other} -> {:error, Error.new(:protocol, "ping answered #{inspect(other)}")}
      {:error, _} = error -> error
    end
  end

  @doc """
  Like `ping/1`, but returns `:ok` or raises `Trellis.Error`.

  ## Example

      :ok = Trellis.ping!(trellis)
  """
  @spec ping!(handle) :: :ok
  def ping!(handle), do: unwrap!(ping(handle))

  ## Catalog and statements

  @doc """
  Creates or upgrades the catalog schema (the handle's `:schema`). Safe to
  run again, and from many nodes at once: migrations take an advisory lock.
  Run it once per deploy, before any handle with `staging: true` connects.

  ## Example

      :ok = Trellis.migrate(trellis)
  """
  @spec migrate(handle) :: :ok | {:error, Error.t()}
  def migrate(handle), do: ok(Call.call(handle, "migrate", %{}))

  @doc """
  Like `migrate/1`, but returns `:ok` or raises `Trellis.Error`.

  ## Example

      :ok = Trellis.migrate!(trellis)
  """
  @spec migrate!(handle) :: :ok
  def migrate!(handle), do: unwrap!(migrate(handle))

  @typedoc """
  What a statement did:

    * `{:transform_defined, target_table}` - a `TRANSFORM` created its target
    * `:paused` - a `PAUSE TRANSFORM` (already paused is fine)
    * `{:resumed, addresses}` - a `RESUME TRANSFORM`; the addresses
      (`"transform"` or `"transform.column"`) it resumed, `[]` when nothing
      named was paused
    * `{:dropped, transform}` - a `DROP TRANSFORM`
    * `{:altered, transform}` - an `ALTER TRANSFORM`
  """
  @type applied ::
          {:transform_defined, String.t()}
          | :paused
          | {:resumed, [String.t()]}
          | {:dropped, String.t()}
          | {:altered, String.t()}

  @doc """
  Runs one statement of Trellis's grammar (`spec/grammar.md`): `TRANSFORM`,
  `PAUSE TRANSFORM`, `RESUME TRANSFORM`, `DROP TRANSFORM` or
  `ALTER TRANSFORM`. A statement that is refused changes nothing.

  ## Example

      {:ok, {:transform_defined, "widget_prices"}} =
        Trellis.apply(trellis, "TRANSFORM widget_prices FROM widgets SELECT price AS price")

      {:ok, :paused} = Trellis.apply(trellis, "PAUSE TRANSFORM widget_prices")
      {:ok, {:resumed, ["widget_prices"]}} = Trellis.apply(trellis, "RESUME TRANSFORM widget_prices")
  """
  @spec apply(handle, String.t()) :: {:ok, applied} | {:error, Error.t()}
  def apply(handle, statement) when is_binary(statement),
    do: statement_call(handle, "apply", statement)

  @doc """
  Like `apply/2`, but returns what the statement did or raises `Trellis.Error`.

  ## Example

      :paused = Trellis.apply!(trellis, "PAUSE TRANSFORM widget_prices")
  """
  @spec apply!(handle, String.t()) :: applied
  def apply!(handle, statement), do: unwrap!(__MODULE__.apply(handle, statement))

  @doc """
  Defines a transform: `apply/2` for a `TRANSFORM` statement only; any other
  statement is a `:validation` error. The target table is created at once;
  a drain worker builds it (`:waiting_to_backfill` -> `:backfilling` ->
  `:catching_up` -> `:live`).

  ## Example

      {:ok, {:transform_defined, "widget_prices"}} =
        Trellis.define(trellis, "TRANSFORM widget_prices FROM widgets SELECT price AS price")
  """
  @spec define(handle, String.t()) ::
          {:ok, {:transform_defined, String.t()}} | {:error, Error.t()}
  def define(handle, statement) when is_binary(statement),
    do: statement_call(handle, "define", statement)

  @doc """
  Like `define/2`, but returns `{:transform_defined, target}` or raises
  `Trellis.Error`.

  ## Example

      {:transform_defined, "widget_prices"} =
        Trellis.define!(trellis, "TRANSFORM widget_prices FROM widgets SELECT price AS price")
  """
  @spec define!(handle, String.t()) :: {:transform_defined, String.t()}
  def define!(handle, statement), do: unwrap!(define(handle, statement))

  defp statement_call(handle, op, statement) do
    with {:ok, result} <- Call.call(handle, op, %{"statement" => statement}) do
      case result do
        %{"tag" => "transform_defined", "target" => target} -> {:ok, {:transform_defined, target}}
        %{"tag" => "paused"} -> {:ok, :paused}
        %{"tag" => "resumed", "addresses" => addresses} -> {:ok, {:resumed, addresses}}
        %{"tag" => "dropped", "target" => target} -> {:ok, {:dropped, target}}
        %{"tag" => "altered", "target" => target} -> {:ok, {:altered, target}}
        other -> {:error, Error.new(:protocol, "unexpected #{op} result #{inspect(other)}")}
      end
    end
  end

  @doc """
  The state of one transform, by name: a `Trellis.Status`.

  ## Example

      {:ok, %Trellis.Status{status: :live, backlog_pages: 0}} =
        Trellis.status(trellis, "widget_prices")
  """
  @spec status(handle, String.t()) :: {:ok, Trellis.Status.t()} | {:error, Error.t()}
  def status(handle, transform) when is_binary(transform) do
    with {:ok, wire} <- Call.call(handle, "status", %{"target" => transform}) do
      {:ok, Trellis.Status.from_wire(wire)}
    end
  end

  @doc """
  Like `status/2`, but returns the status or raises `Trellis.Error`.

  ## Example

      %Trellis.Status{status: :live} = Trellis.status!(trellis, "widget_prices")
  """
  @spec status!(handle, String.t()) :: Trellis.Status.t()
  def status!(handle, transform), do: unwrap!(status(handle, transform))

  @doc """
  Every transform of the instance, by name: `Trellis.Definition` structs
  whose `:statement` would create the transform as it is now.

  ## Example

      {:ok, [%Trellis.Definition{name: "widget_prices"}]} = Trellis.definitions(trellis)
  """
  @spec definitions(handle) :: {:ok, [Trellis.Definition.t()]} | {:error, Error.t()}
  def definitions(handle) do
    with {:ok, wire} <- Call.call(handle, "definitions", %{}) do
      {:ok, Enum.map(wire, &Trellis.Definition.from_wire/1)}
    end
  end

  @doc """
  Like `definitions/1`, but returns the list or raises `Trellis.Error`.

  ## Example

      [%Trellis.Definition{}] = Trellis.definitions!(trellis)
  """
  @spec definitions!(handle) :: [Trellis.Definition.t()]
  def definitions!(handle), do: unwrap!(definitions(handle))

  @doc """
  The instance's definitions as SQL, to append to a schema-only dump of the
  database (what `mix ecto.dump` writes).

  A schema-only dump carries the catalog's tables, the targets and the
  capture triggers, but no rows: loaded, it has targets and no transforms.
  This SQL puts the definitions (and the catalog's version) back, so the
  first drain workers on a database loaded from the file build every target
  again. Only definitions: a paused transform loads `:waiting_to_backfill`,
  and the ledger and backfill progress are left behind. A transform whose
  source table is gone is left out.

  ## Example

      {:ok, sql} = Trellis.dump_definitions_sql(trellis)
      File.write!("priv/repo/structure.sql", sql, [:append])
  """
  @spec dump_definitions_sql(handle) :: {:ok, String.t()} | {:error, Error.t()}
  def dump_definitions_sql(handle), do: Call.call(handle, "dump_definitions_sql", %{})

  @doc """
  Like `dump_definitions_sql/1`, but returns the SQL or raises
  `Trellis.Error`.

  ## Example

      sql = Trellis.dump_definitions_sql!(trellis)
  """
  @spec dump_definitions_sql!(handle) :: String.t()
  def dump_definitions_sql!(handle), do: unwrap!(dump_definitions_sql(handle))

  @doc """
  Rebuilds a transform's target from its source: the backfill starts again
  from the first key while capture keeps running.

  ## Example

      :ok = Trellis.request_backfill(trellis, "widget_prices")
  """
  @spec request_backfill(handle, String.t()) :: :ok | {:error, Error.t()}
  def request_backfill(handle, transform) when is_binary(transform),
    do: ok(Call.call(handle, "request_backfill", %{"target" => transform}))

  @doc """
  Like `request_backfill/2`, but returns `:ok` or raises `Trellis.Error`.

  ## Example

      :ok = Trellis.request_backfill!(trellis, "widget_prices")
  """
  @spec request_backfill!(handle, String.t()) :: :ok
  def request_backfill!(handle, transform), do: unwrap!(request_backfill(handle, transform))

  @doc """
  Pauses now the transforms reading any table whose Trellis capture was
  changed outside Trellis, and returns those tables as `"schema.table"`.

  Capture is changed outside Trellis when one of its triggers is disabled
  (`ALTER TABLE ... DISABLE TRIGGER`, a loader's `--disable-triggers`), left
  firing only in origin or replica sessions (`ENABLE TRIGGER ALL` does that;
  Trellis needs `ENABLE ALWAYS`), dropped or replaced, or when the table is
  gone. Writes made meanwhile never reached the targets, so their transforms
  are paused with `paused_kind: :disruption` (one already paused keeps its
  pause, and its RESUME rebuilds too), and `RESUME TRANSFORM` reinstalls
  capture and rebuilds the target. The staging worker makes the same check about once a second; this
  call does it at once. A table that is still disrupted is returned again.

  ## Example

      {:ok, ["public.widgets"]} = Trellis.detect_capture_disruptions(trellis)
      {:ok, %Trellis.Status{status: :paused, paused_kind: :disruption}} =
        Trellis.status(trellis, "widget_prices")
      {:ok, {:resumed, ["widget_prices"]}} = Trellis.apply(trellis, "RESUME TRANSFORM widget_prices")
  """
  @spec detect_capture_disruptions(handle) :: {:ok, [String.t()]} | {:error, Error.t()}
  def detect_capture_disruptions(handle), do: Call.call(handle, "detect_capture_disruptions", %{})

  @doc """
  Like `detect_capture_disruptions/1`, but returns the tables or raises
  `Trellis.Error`.

  ## Example

      [] = Trellis.detect_capture_disruptions!(trellis)
  """
  @spec detect_capture_disruptions!(handle) :: [String.t()]
  def detect_capture_disruptions!(handle), do: unwrap!(detect_capture_disruptions(handle))

  ## Fleet and convergence

  @doc """
  Whether any node of the fleet runs a drain worker for this instance (one
  heartbeated in the last 5 seconds).

  ## Example

      {:ok, true} = Trellis.has_live_drain_workers(trellis)
  """
  @spec has_live_drain_workers(handle) :: {:ok, boolean} | {:error, Error.t()}
  def has_live_drain_workers(handle), do: Call.call(handle, "has_live_drain_workers", %{})

  @doc """
  Like `has_live_drain_workers/1`, but returns the boolean or raises `Trellis.Error`.

  ## Example

      true = Trellis.has_live_drain_workers!(trellis)
  """
  @spec has_live_drain_workers!(handle) :: boolean
  def has_live_drain_workers!(handle), do: unwrap!(has_live_drain_workers(handle))

  @doc """
  Whether any node of the fleet holds this instance's staging worker (one
  heartbeated in the last 5 seconds).

  ## Example

      {:ok, true} = Trellis.has_live_staging_worker(trellis)
  """
  @spec has_live_staging_worker(handle) :: {:ok, boolean} | {:error, Error.t()}
  def has_live_staging_worker(handle), do: Call.call(handle, "has_live_staging_worker", %{})

  @doc """
  Like `has_live_staging_worker/1`, but returns the boolean or raises `Trellis.Error`.

  ## Example

      true = Trellis.has_live_staging_worker!(trellis)
  """
  @spec has_live_staging_worker!(handle) :: boolean
  def has_live_staging_worker!(handle), do: unwrap!(has_live_staging_worker(handle))

  @doc """
  An opaque token standing for every write committed so far, for
  `await_converged/3`. Pass it back exactly as returned.

  ## Example

      {:ok, token} = Trellis.watermark_token(trellis)
  """
  @spec watermark_token(handle) :: {:ok, binary} | {:error, Error.t()}
  def watermark_token(handle) do
    case Call.call(handle, "watermark_token", %{}) do
      {:ok, {:bin, token}} -> {:ok, token}
      {:ok, other} -> {:error, Error.new(:protocol, "unexpected token #{inspect(other)}")}
      {:error, _} = error -> error
    end
  end

  @doc """
  Like `watermark_token/1`, but returns the token or raises `Trellis.Error`.

  ## Example

      token = Trellis.watermark_token!(trellis)
  """
  @spec watermark_token!(handle) :: binary
  def watermark_token!(handle), do: unwrap!(watermark_token(handle))

  @doc """
  Waits until every write committed before `token` has reached the targets of
  every transform that is not paused (a paused transform's writes are
  accounted for by its paused state).

  ## Options

    * `:timeout_ms` - how long to wait (default: `30_000`); past it the
      result is `{:error, %Trellis.Error{code: :timeout}}`

  ## Example

      {:ok, token} = Trellis.watermark_token(trellis)
      :ok = Trellis.await_converged(trellis, token, timeout_ms: 10_000)
  """
  @spec await_converged(handle, binary, keyword) :: :ok | {:error, Error.t()}
  def await_converged(handle, token, opts \\ []) when is_binary(token) do
    opts = Keyword.validate!(opts, timeout_ms: 30_000)
    timeout_ms = opts[:timeout_ms]

    unless is_integer(timeout_ms) and timeout_ms >= 0 do
      raise ArgumentError, "option :timeout_ms must be a non-negative integer"
    end

    args = %{"token" => {:bin, token}, "timeout_ms" => timeout_ms}

    # The call's own budget outlasts the wait, so "not converged in time"
    # arrives as an answer rather than as a cut-off call.
    case Call.call(handle, "await_converged", args, timeout_ms: timeout_ms + 5_000) do
      {:ok, true} ->
        :ok

      {:ok, false} ->
        {:error,
         Error.new(
           :timeout,
           "writes committed before the token had not converged after #{timeout_ms} ms"
         )}

      {:error, _} = error ->
        error
    end
  end

  @doc """
  Like `await_converged/3`, but returns `:ok` or raises `Trellis.Error`.

  ## Example

      :ok = Trellis.await_converged!(trellis, Trellis.watermark_token!(trellis))
  """
  @spec await_converged!(handle, binary, keyword) :: :ok
  def await_converged!(handle, token, opts \\ []),
    do: unwrap!(await_converged(handle, token, opts))

  defp ok({:ok, _}), do: :ok
  defp ok({:error, _} = error), do: error

  ## Internals shared by the functions above and Trellis.Call

  @doc false
  # The handle struct behind a handle or a name. A name resolves through
  # :persistent_term, written by the owner when it starts, so calls never
  # pass through the owner process.
  @spec resolve(handle) :: {:ok, t} | {:error, Error.t()}
  def resolve(%__MODULE__{owner: owner} = handle) when node(owner) == node(), do: {:ok, handle}

  def resolve(%__MODULE__{owner: owner}) do
    {:error,
     Error.new(
       :validation,
       "this handle belongs to node #{node(owner)}: a handle works only on the node that connected it"
     )}
  end

  def resolve(name) when is_atom(name) and name not in [nil, true, false] do
    case :persistent_term.get({__MODULE__, name}, nil) do
      nil ->
        {:error, Error.new(:validation, "no Trellis handle is registered as #{inspect(name)}")}

      handle ->
        resolve(handle)
    end
  end

  def resolve(other) do
    raise ArgumentError,
          "expected a Trellis handle or the name of a supervised one, got: #{inspect(other)}"
  end

  defp unwrap!(:ok), do: :ok
  defp unwrap!({:ok, value}), do: value
  defp unwrap!({:error, %Error{} = error}), do: raise(error)

  ## Options

  defp validate_options!(opts, function) do
    unless Keyword.keyword?(opts) do
      raise ArgumentError, "Trellis.#{function}/1 expects a keyword list of options"
    end

    {name, opts} = Keyword.pop(opts, :name)
    check_name!(name, function)

    known = Enum.map(@options, &elem(&1, 0))

    case Enum.reject(Keyword.keys(opts), &(&1 in known)) do
      [] ->
        :ok

      unknown ->
        # The values are never shown: the URL may carry a password.
        raise ArgumentError,
              "unknown option(s) #{inspect(unknown)} for Trellis.#{function}/1; " <>
                "known options: #{inspect(if function == :start_link, do: [:name | known], else: known)}"
    end

    validated =
      for {key, check, what, default} <- @options do
        case Keyword.fetch(opts, key) do
          {:ok, nil} when default != :required ->
            {key, default}

          {:ok, value} ->
            check.(value) || raise ArgumentError, "option #{inspect(key)} must be #{what}"
            {key, value}

          :error when default == :required ->
            raise ArgumentError, "option #{inspect(key)} is required"

          :error ->
            {key, default}
        end
      end

    Keyword.put(validated, :name, name)
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
  def identifier?(value), do: is_binary(value) and value != ""
  @doc false
  def pos_integer?(value), do: is_integer(value) and value > 0
  @doc false
  def non_neg_integer?(value), do: is_integer(value) and value >= 0
end
