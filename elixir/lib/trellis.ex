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
  parallel and never queue behind each other. A process's own calls stay in
  order, since it waits for each reply.

  Every call returns within its budget, counted from when it is submitted:
  the handle's `:timeout_ms` (30 s by default), or `await_converged/3`'s own
  `:timeout_ms`. A call that runs out of it returns `{:error,
  %Trellis.Error{code: :timeout}}`, and the port program has already
  stopped what it started on the server: the request carries the budget
  less a tenth (at least 20 ms, at most 1 s), the port program cancels
  the statement on the server at that point and answers `:timeout`, and the
  caller gives up on its own at the full budget only when that answer does
  not come (a port program that is stuck). A process killed during a call
  leaves nothing behind: the call is cancelled within a fraction of a
  second.

  Non-bang functions return `{:ok, value}` (or `:ok`) or
  `{:error, %Trellis.Error{}}`; bang variants return the value or raise the
  error.

  ## Bad arguments

  A mistake in the calling code's types raises `ArgumentError` at once, as
  Elixir's own functions do; a value of the right type that Trellis refuses
  is returned as `{:error, %Trellis.Error{code: :validation}}`, whose
  message names the argument or option and what it must be. Per function:

  | function | raises `ArgumentError` | returns a `:validation` error |
  | --- | --- | --- |
  | `connect/1`, `start_link/1` | options not a keyword list, an unknown option, a missing `:url`, a value of the wrong type (`pool_size: "4"`), a `:name` that is not an atom (or given to `connect/1`) | a value out of range: an empty `:url`, `:schema` or `:record`, `:pool_size` outside 1..100, `:drain_threads` outside 0..100, `:timeout_ms` below 1 (see `Trellis.Options`) |
  | every function taking a handle | something that is neither a handle nor an atom | a name with no handle registered under it, a handle of another node, a handle that was shut down |
  | `apply/2`, `define/2` | a statement that is not a string | a statement the grammar or the engine refuses (an empty one too), another statement than `TRANSFORM` given to `define/2` |
  | `status/2`, `request_backfill/2` | a name that is not a string | an empty name or one that is not a name (`"a b"`); a well-formed name of no transform is `:not_found` |
  | `await_converged/3` | a token that is not a binary, an unknown option, a `:timeout_ms` that is not an integer | `:timeout_ms` outside 1..86 400 000; a token that is not one `watermark_token/1` returned |
  | `shutdown/1` | something that is neither a handle nor an atom | a name (the supervisor stops a named handle) |

  ## Names

  `define/2` returns the transform's name, and `{:resumed, addresses}` its
  addresses, in the one form every statement and read takes back unchanged:
  see `Trellis.Applied`.

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
  the VM's one metrics registry (every handle, live or gone) for a
  `/metrics` route the host already serves, without waiting on any port.

  ## Where this package differs from the guide

  The user guide (`trellis_pg`'s, written for a NIF) is the contract; read
  "NIF" as "port program". `test/trellis/guide_examples_test.exs` runs its
  examples against a real database. Where they cannot run as written:

    * The guide's `status/2` right after `define/2` reads `:live`. That
      holds as written for its example, a source with no rows: that first
      build is done inside `define/2`. Over a source that has rows the
      first build runs in the background, on a drain worker, and the
      transform reads `:waiting_to_backfill`, `:backfilling` and
      `:catching_up` until a drain worker marks it `:live`; a first build
      inside `define/2` would hold the call, and its budget, for as long
      as the table takes to copy. `await_converged/3` waits for the data,
      not for the state.
    * `quarantine_status/2` returns a list of `Trellis.QuarantineEntry`
      (the guide gives no shape): one entry for a column address, one per
      quarantined column for a transform. A column in quarantine keeps
      being maintained for every key but its failing ones, whose value is
      `NULL` in the target; see `Trellis.QuarantineEntry`.
    * `release_key/4` takes the key as a list of values in key-column
      order; a map is not accepted.
    * `self_check/3` reports `:unsettled` besides the guide's outcomes, and
      a `Trellis.SelfCheckReport` carries `:divergence_count`,
      `:unsettled_keys`, `:failed_ranges` and `:quarantined_columns`: a
      check under live writes says when it could not judge a key rather
      than call it clean or diverged. They come with those engine
      features rather than as stubs.
    * `Trellis.Migration` is compiled only when the host has `ecto_sql`,
      as the guide says (decided when `trellis_pg` compiles; see
      `Trellis.Migration`, "Without Ecto", for how, and for a host that
      adds Ecto later); its example runs in the Ecto host app of the
      repository (`scripts/test-ecto.sh`), not in this package's own
      suite, which has no Ecto and checks that the module is absent.
    * Calls run in the calling process and wait in a `receive` (as the
      guide says); there are no dirty schedulers involved, since the work
      runs in the port program, an operating-system process. A crash there
      is a `:connection` error for the calls in flight, never a VM crash.
    * Option values the port program would refuse (`pool_size: 0`) are
      `:validation` errors from `connect/1` at once, and a wrong type raises
      (see "Bad arguments"); the guide does not say.
    * Names come back in the form statements take (`~s("it's")`, not
      `it's`), so they can be passed back; see `Trellis.Applied`.

  ## Handles from `connect/1`

  A handle from `connect/1` belongs to the process that called it: it shuts
  down when that process exits, or when `shutdown/1` is called.
  """

  import Kernel, except: [apply: 2]

  alias Trellis.{Applied, Call, Error, HandleState, Options}

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
          | {:capture, :triggers | :logical | :auto}
          | {:name, atom}

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
    * `:capture` - how writes to the sources are captured: `:triggers`
      (statement triggers write each change to a table in the writer's
      transaction), `:logical` (a replication slot reads them from the WAL:
      the writers pay nothing; needs `wal_level = logical` and a role with
      `REPLICATION` that owns the source tables), or `:auto` (`:logical`
      when the server and role allow it, else `:triggers`). The mode belongs
      to the instance: the handle with `staging: true` sets it as it
      connects (switching while writes run loses and doubles nothing), and
      other handles ignore the option, so give every staging handle the same
      one. The log says which mode is in force. See the README, "Choosing a
      capture mode" (default: `:triggers`, or what `config :trellis_pg,
      capture: ...` says for the whole application)

  ## Example

      {:ok, trellis} = Trellis.connect(url: "postgres://localhost/app", drain_threads: 2)
  """
  @spec connect([option]) :: {:ok, t} | {:error, Error.t()}
  def connect(opts) do
    with {:ok, opts} <- Options.validate(:connect, opts) do
      spec = {Trellis.Owner, Keyword.put(opts, :caller, self())}

      case DynamicSupervisor.start_child(Trellis.HandleSupervisor, spec) do
        {:ok, owner} -> {:ok, Trellis.Owner.handle(owner)}
        {:error, {:shutdown, %Error{} = error}} -> {:error, error}
      end
    end
  end

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
    with {:ok, opts} <- Options.validate(:start_link, opts) do
      case Trellis.Owner.start_link(Keyword.put(opts, :caller, nil)) do
        {:error, {:shutdown, %Error{} = error}} -> {:error, error}
        other -> other
      end
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
    with {:ok, handle} <- resolve(handle), do: Trellis.Owner.shutdown(handle)
  end

  def shutdown(other), do: raise(ArgumentError, not_a_handle(other))

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
      {:ok, Options.from_wire(wire, handle.timeout_ms)}
    end
  end

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

  @typedoc "What a statement did: see `Trellis.Applied`."
  @type applied :: Applied.t()

  @doc """
  Runs one statement of Trellis's grammar (`spec/grammar.md`): `TRANSFORM`,
  `PAUSE TRANSFORM`, `RESUME TRANSFORM`, `DROP TRANSFORM` or
  `ALTER TRANSFORM`. A statement that is refused changes nothing.

  `ALTER TRANSFORM ... ADD COLUMN` / `ALTER COLUMN` rebuild only the column
  they add or change (the transform reads `:waiting_to_backfill`, then
  `:backfilling`, `:catching_up` and `:live` again while the column is
  built; its other columns stay maintained). On a `GROUP BY` over a join
  the new aggregate may read any `table.column` of the statement, even one
  the definition did not read before: the join then gains that column and
  is rebuilt for it first, and the aggregate is built once the join is, all
  from the one statement (refused, nothing of it happens). `DROP COLUMN`
  keeps the columns the join reads.

  ## Example

      {:ok, {:transform_defined, "widget_prices"}} =
        Trellis.apply(trellis, "TRANSFORM widget_prices FROM widgets SELECT price AS price")

      {:ok, :paused} = Trellis.apply(trellis, "PAUSE TRANSFORM widget_prices")
      {:ok, {:resumed, ["widget_prices"]}} = Trellis.apply(trellis, "RESUME TRANSFORM widget_prices")
  """
  @spec apply(handle, String.t()) :: {:ok, applied} | {:error, Error.t()}
  def apply(handle, statement), do: statement_call(handle, "apply", statement)

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
  def define(handle, statement), do: statement_call(handle, "define", statement)

  defp statement_call(handle, op, statement) do
    text!(statement, "the statement", op)

    with {:ok, result} <- Call.call(handle, op, %{"statement" => statement}) do
      Applied.from_wire(result, op)
    end
  end

  @doc """
  The state of one transform, by name: a `Trellis.Status`.

  ## Example

      {:ok, %Trellis.Status{status: :live, backlog_pages: 0}} =
        Trellis.status(trellis, "widget_prices")
  """
  @spec status(handle, String.t()) :: {:ok, Trellis.Status.t()} | {:error, Error.t()}
  def status(handle, transform) do
    text!(transform, "the transform name", "status")

    with {:ok, wire} <- Call.call(handle, "status", %{"target" => transform}) do
      {:ok, Trellis.Status.from_wire(wire)}
    end
  end

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
  Rebuilds a transform's target from its source: the backfill starts again
  from the first key while capture keeps running. A `GROUP BY` over a join
  rebuilds its join first and then its groups from the rebuilt join; its
  status reads `:backfilling` through both, then `:catching_up` and `:live`.

  ## Example

      :ok = Trellis.request_backfill(trellis, "widget_prices")
  """
  @spec request_backfill(handle, String.t()) :: :ok | {:error, Error.t()}
  def request_backfill(handle, transform) do
    text!(transform, "the transform name", "request_backfill")
    ok(Call.call(handle, "request_backfill", %{"target" => transform}))
  end

  @doc """
  Starts a check of a transform's target against a fresh recompute of its
  definition, as a background job, and returns the job at once
  (`:queued`). A drain worker anywhere in the fleet runs it; with none it
  stays `:queued`. Read it back with `self_check_job/2` until its state is
  `:done`, when its `:report` is a `Trellis.SelfCheckReport`.

  One job per target: while the target's job is `:queued` or `:running`,
  this returns that job (whatever the options); once it has finished
  (`:done`, `:failed` or `:cancelled`), this replaces it with a new one (the
  old id then reads as `nil`). A `PAUSE TRANSFORM` of the target cancels
  its unfinished job; a job that meets a paused transform fails (see
  `Trellis.SelfCheckJob`).

  The check runs beside writers and drains, takes no lock that blocks them,
  and reports a row as diverging only once no work that could change it is
  pending: lag is never a divergence, and a real divergence is not hidden
  by lag. See `Trellis.SelfCheckReport` for the outcomes.

  ## Options

    * `:mode` - `:full` (the default) compares every key of the target and
      of the recompute, range by range; `:sample` compares about
      `:sample_size` keys drawn at random from the target's rows (which
      finds wrong values and extra rows there) plus as many drawn from the
      definition's input (which finds missing rows). A sample can miss any
      divergence on a key it did not draw.
    * `:sample_size` - the number of keys a `:sample` draws from each side,
      in 1..1000000; only with `mode: :sample`.

  A wrong option type or an unknown option raises `ArgumentError`; a bad
  value (`:sample` without a size, a size out of range) is a `:validation`
  error. An unknown transform is `:not_found`. A GROUP BY or JOIN target
  with a source index gap (`status/2`'s `:source_index_gaps`) is refused
  with a `:validation` error naming the `CREATE INDEX` that closes it: the
  check looks keys up in the sources as maintenance does, and without the
  index a full check would scan the table once per key. A transform
  defined `WITHOUT SOURCE INDEX` is checked anyway.

  ## Example

      {:ok, %Trellis.SelfCheckJob{id: id, state: :queued}} =
        Trellis.self_check(trellis, "widget_prices")
  """
  @spec self_check(handle, String.t(), keyword) ::
          {:ok, Trellis.SelfCheckJob.t()} | {:error, Error.t()}
  def self_check(handle, transform, opts \\ []) do
    text!(transform, "the transform name", "self_check")

    with {:ok, args} <- Trellis.SelfCheckJob.wire_options(opts),
         {:ok, wire} <- Call.call(handle, "self_check", Map.put(args, "target", transform)) do
      {:ok, Trellis.SelfCheckJob.from_wire(wire)}
    end
  end

  @doc """
  Reads a self-check job back by id: a `Trellis.SelfCheckJob`, or `nil`
  when the job was replaced by a newer check of its target or its
  transform was dropped.

  ## Example

      {:ok, %Trellis.SelfCheckJob{state: :done, report: %{outcome: :clean}}} =
        Trellis.self_check_job(trellis, id)
  """
  @spec self_check_job(handle, pos_integer) ::
          {:ok, Trellis.SelfCheckJob.t() | nil} | {:error, Error.t()}
  def self_check_job(handle, id) do
    unless is_integer(id) and id > 0 do
      raise ArgumentError,
            "self_check_job/2 takes a job id (a positive integer), got: #{inspect(id)}"
    end

    with {:ok, wire} <- Call.call(handle, "self_check_job", %{"id" => id}) do
      {:ok, Trellis.SelfCheckJob.from_wire(wire)}
    end
  end

  @doc """
  Every column in quarantine, across the instance's transforms: a list of
  `Trellis.QuarantineEntry`, by transform and column order (`[]` when none
  is).

  ## Example

      {:ok, [%Trellis.QuarantineEntry{target: "widget_prices.price"} | _]} =
        Trellis.quarantined(trellis)
  """
  @spec quarantined(handle) :: {:ok, [Trellis.QuarantineEntry.t()]} | {:error, Error.t()}
  def quarantined(handle) do
    with {:ok, wire} <- Call.call(handle, "quarantined", %{}) do
      {:ok, Enum.map(wire, &Trellis.QuarantineEntry.from_wire/1)}
    end
  end

  @doc """
  The quarantine of one target: for `"transform.column"`, `[entry]` while
  that column is in quarantine and `[]` otherwise; for `"transform"`, an
  entry for each of its columns in quarantine. A target names a transform
  and optionally a column, exactly as `quarantined/1` reports it; an
  unknown transform or column is `:not_found`.

  ## Example

      {:ok, [%Trellis.QuarantineEntry{rows: 3}]} =
        Trellis.quarantine_status(trellis, "widget_prices.price")
  """
  @spec quarantine_status(handle, String.t()) ::
          {:ok, [Trellis.QuarantineEntry.t()]} | {:error, Error.t()}
  def quarantine_status(handle, target) do
    text!(target, "the quarantine target", "quarantine_status")

    with {:ok, wire} <- Call.call(handle, "quarantined", %{"target" => target}) do
      {:ok, Enum.map(wire, &Trellis.QuarantineEntry.from_wire/1)}
    end
  end

  @doc """
  The recorded failing rows of a quarantine target (`"transform.column"`,
  or `"transform"` for all its quarantined columns), a page at a time, in
  key order: a `Trellis.SamplePage`. Each sample shows the row's key, its
  input values and PostgreSQL's error. Pass the page's `:next_cursor` back
  as `cursor:` for the next page; it is `nil` on the last one, and paging
  to it reaches every row recorded as failing.

  The rows listed are the rows failing now: a write that fixes or deletes a
  quarantined row brings its value back into the target and takes it out
  of the list, and a column left with no failing row is live again by
  itself (the log says so, and `status/2` shows the column `:live`). After
  `await_converged/3`, the list is exactly the failing rows among the
  writes the token covers. A fix that is no write (a function the
  expression calls, replaced) needs `RESUME TRANSFORM transform.column`,
  which rebuilds the column.

  ## Options

    * `:limit` - rows per page, in 1..1000 (default 100)
    * `:cursor` - the `:next_cursor` of the previous page; `nil` (the
      default) for the first page

  A wrong option type or an unknown option raises `ArgumentError`; a limit
  out of range, or a cursor that is not one this function returned, is a
  `:validation` error.

  ## Example

      {:ok, %Trellis.SamplePage{samples: rows, next_cursor: cursor}} =
        Trellis.sample_quarantined(trellis, "widget_prices.price", limit: 50)
  """
  @spec sample_quarantined(handle, String.t(), keyword) ::
          {:ok, Trellis.SamplePage.t()} | {:error, Error.t()}
  def sample_quarantined(handle, target, opts \\ []) do
    text!(target, "the quarantine target", "sample_quarantined")

    unless Keyword.keyword?(opts) do
      raise ArgumentError,
            "Trellis.sample_quarantined/3 expects a keyword list of options, got: #{inspect(opts)}"
    end

    opts = Keyword.validate!(opts, limit: 100, cursor: nil)

    unless is_integer(opts[:limit]) do
      raise ArgumentError, "option :limit must be an integer, got: #{inspect(opts[:limit])}"
    end

    unless is_nil(opts[:cursor]) or is_binary(opts[:cursor]) do
      raise ArgumentError,
            "option :cursor must be a next_cursor sample_quarantined/3 returned, got: " <>
              inspect(opts[:cursor])
    end

    args = %{"target" => target, "limit" => opts[:limit], "cursor" => opts[:cursor]}

    with {:ok, wire} <- Call.call(handle, "sample_quarantined", args) do
      {:ok, Trellis.SamplePage.from_wire(wire)}
    end
  end

  @doc """
  Since when a quarantine target has been in quarantine, a `DateTime`: for
  `"transform.column"`, when that column was put in quarantine; for
  `"transform"`, the earliest of its columns. `nil` when it is not in
  quarantine.

  ## Example

      {:ok, %DateTime{}} = Trellis.poisoned_since(trellis, "widget_prices.price")
  """
  @spec poisoned_since(handle, String.t()) :: {:ok, DateTime.t() | nil} | {:error, Error.t()}
  def poisoned_since(handle, target) do
    with {:ok, entries} <- quarantine_status(handle, target) do
      {:ok,
       entries
       |> Enum.map(& &1.since)
       |> Enum.reject(&is_nil/1)
       |> Enum.min(DateTime, fn -> nil end)}
    end
  end

  @doc """
  Releases a key that `transform` holds, once the cause is fixed: the key
  is recomputed now. A key is held when its row cannot be written for a
  reason no column explains (its WHERE fails, the target refuses the row);
  its target row stays as it was and `Trellis.Status`'s `:held_keys`
  counts it.

  `key` is the key's values in key-column order, as a list (a map is not
  accepted: a list says the order without naming columns); each value is
  a string, an integer, a float, a boolean or a `Decimal`, and is read as
  the key column's type (`[7]` and `["7"]` name one key); `nil` is NULL (a
  group whose key is NULL, or a join unit that covers a whole row of the
  join's root, `[20, nil]`: see the package README on side units).

  Returns `:ok` once the key's row is written (or, if a column's value
  now fails for it, charged to that column's quarantine). When the row
  still cannot be written, the key stays held with the new error, which is
  returned as a `:database` error carrying PostgreSQL's SQLSTATE. A key the
  transform does not hold is `:not_found`; a key of the wrong length, a
  paused transform or one in its first build is a `:validation` error.

  A new write to a held key recomputes it like any other write: when that
  succeeds, the key is released without a call.

  A statement compiled into stages (a subquery in HAVING, say) can hold a
  key in one of its hidden stages; it is released by the same call with
  the statement's transform name (the stage's key, a group's key for its
  grouping), and counted in that transform's `:held_keys`.

  `opts` takes no option yet; it is there so later ones need no new arity.

  ## Example

      :ok = Trellis.release_key(trellis, "widget_prices", [42], [])
  """
  @spec release_key(handle, String.t(), [term], keyword) :: :ok | {:error, Error.t()}
  def release_key(handle, transform, key, opts \\ []) do
    text!(transform, "the transform name", "release_key")

    unless is_list(key) and key != [] do
      raise ArgumentError,
            "release_key/4: the key must be a non-empty list of its values in key-column " <>
              "order, got: #{inspect(key)}"
    end

    unless Keyword.keyword?(opts) do
      raise ArgumentError,
            "release_key/4 expects a keyword list of options, got: #{inspect(opts)}"
    end

    Keyword.validate!(opts, [])
    values = Enum.map(key, &key_value!/1)
    ok(Call.call(handle, "release_key", %{"transform" => transform, "key" => values}))
  end

  defp key_value!(nil), do: nil
  defp key_value!(v) when is_binary(v), do: v
  defp key_value!(v) when is_integer(v), do: Integer.to_string(v)
  defp key_value!(v) when is_float(v), do: Float.to_string(v)
  defp key_value!(v) when is_boolean(v), do: Atom.to_string(v)
  defp key_value!(%{__struct__: Decimal} = v), do: to_string(v)

  defp key_value!(v) do
    raise ArgumentError,
          "release_key/4: a key value must be a string, an integer, a float, a boolean, a " <>
            "Decimal or nil (NULL), got: #{inspect(v)}"
  end

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
  Whether any node of the fleet holds this instance's staging worker (one
  heartbeated in the last 5 seconds).

  ## Example

      {:ok, true} = Trellis.has_live_staging_worker(trellis)
  """
  @spec has_live_staging_worker(handle) :: {:ok, boolean} | {:error, Error.t()}
  def has_live_staging_worker(handle), do: Call.call(handle, "has_live_staging_worker", %{})

  @doc """
  An opaque token standing for every write and every definition committed
  so far, for `await_converged/3`. Pass it back exactly as returned.

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
  Waits until every write committed before `token` has reached the targets of
  every transform that is not paused (a paused transform's writes are
  accounted for by its paused state) and was defined before the token: a
  transform defined after it, still building, is not waited for. A write
  whose row fails is settled once charged: its key is held, or its failing
  columns are quarantined (see `sample_quarantined/3`).

  ## Options

    * `:timeout_ms` - this call's budget, counted from when it is submitted,
      like any call's (default: the handle's `:timeout_ms`). It may be
      longer than the handle's, for a long wait, up to 24 hours. The wait on
      the server ends two tenths of the budget earlier (at least 40 ms,
      at most 2 s), so "not converged yet" arrives as an answer, and the call
      returns `{:error, %Trellis.Error{code: :timeout}}` within the budget
      either way.

  A token that is not a binary, or a `:timeout_ms` that is not an integer,
  raises `ArgumentError`; a negative or too long `:timeout_ms` is a
  `:validation` error.

  ## Example

      {:ok, token} = Trellis.watermark_token(trellis)
      :ok = Trellis.await_converged(trellis, token, timeout_ms: 10_000)
  """
  @spec await_converged(handle, binary, keyword) :: :ok | {:error, Error.t()}
  def await_converged(handle, token, opts \\ []) do
    unless is_binary(token) do
      raise ArgumentError, "await_converged/3 takes the token as a binary, got: #{inspect(token)}"
    end

    opts = Keyword.validate!(opts, [:timeout_ms])

    with {:ok, budget} <- wait_budget(opts[:timeout_ms]),
         {:ok, handle} <- resolve(handle) do
      budget = budget || handle.timeout_ms
      # The server's wait ends before the request's own budget, which ends
      # before the caller's: each answer arrives inside the one above it.
      wait_ms = max(Call.port_budget_ms(Call.port_budget_ms(budget)), 0)
      args = %{"token" => {:bin, token}, "timeout_ms" => wait_ms}

      case Call.call(handle, "await_converged", args, timeout_ms: budget) do
        {:ok, true} ->
          :ok

        {:ok, false} ->
          {:error,
           Error.new(
             :timeout,
             "writes committed before the token had not converged within #{budget} ms"
           )}

        {:error, _} = error ->
          error
      end
    end
  end

  @max_wait_ms 86_400_000

  defp wait_budget(nil), do: {:ok, nil}

  defp wait_budget(budget) when is_integer(budget) and budget in 1..@max_wait_ms,
    do: {:ok, budget}

  defp wait_budget(budget) when is_integer(budget) do
    {:error,
     Error.new(
       :validation,
       "option :timeout_ms must be in 1..#{@max_wait_ms} (24 hours), got: #{budget}"
     )}
  end

  defp wait_budget(budget),
    do: raise(ArgumentError, "option :timeout_ms must be an integer, got: #{inspect(budget)}")

  defp ok({:ok, _}), do: :ok
  defp ok({:error, _} = error), do: error

  ## Bang variants

  # One line per function: {name, [{argument, type}], type of the value,
  # what is returned in words, an example}. Each variant calls the non-bang
  # function and raises the Trellis.Error it returns; a default argument
  # ({argument, type, default}) carries over.
  @bang_variants [
    {:connect, [opts: quote(do: [option])], quote(do: t), "the handle",
     ~S|trellis = Trellis.connect!(url: "postgres://localhost/app")|},
    {:shutdown, [handle: quote(do: handle)], :ok, "`:ok`", "Trellis.shutdown!(trellis)"},
    {:config, [handle: quote(do: handle)], quote(do: map), "the map",
     ~S|%{schema: "trellis"} = Trellis.config!(trellis)|},
    {:server_info, [handle: quote(do: handle)], quote(do: map), "the map",
     ~S|%{instance: "app/trellis"} = Trellis.server_info!(trellis)|},
    {:ping, [handle: quote(do: handle)], :ok, "`:ok`", "Trellis.ping!(trellis)"},
    {:migrate, [handle: quote(do: handle)], :ok, "`:ok`", "Trellis.migrate!(trellis)"},
    {:apply, [handle: quote(do: handle), statement: quote(do: String.t())], quote(do: applied),
     "what the statement did",
     ~S|:paused = Trellis.apply!(trellis, "PAUSE TRANSFORM widget_prices")|},
    {:define, [handle: quote(do: handle), statement: quote(do: String.t())],
     quote(do: {:transform_defined, String.t()}), "`{:transform_defined, name}`",
     ~S|{:transform_defined, "widget_prices"} =
  Trellis.define!(trellis, "TRANSFORM widget_prices FROM widgets SELECT price AS price")|},
    {:status, [handle: quote(do: handle), transform: quote(do: String.t())],
     quote(do: Trellis.Status.t()), "the status",
     ~S|%Trellis.Status{status: :live} = Trellis.status!(trellis, "widget_prices")|},
    {:definitions, [handle: quote(do: handle)], quote(do: [Trellis.Definition.t()]), "the list",
     "[%Trellis.Definition{}] = Trellis.definitions!(trellis)"},
    {:dump_definitions_sql, [handle: quote(do: handle)], quote(do: String.t()), "the SQL",
     "sql = Trellis.dump_definitions_sql!(trellis)"},
    {:request_backfill, [handle: quote(do: handle), transform: quote(do: String.t())], :ok,
     "`:ok`", ~S|Trellis.request_backfill!(trellis, "widget_prices")|},
    {:self_check,
     [
       {:handle, quote(do: handle)},
       {:transform, quote(do: String.t())},
       {:opts, quote(do: keyword), []}
     ], quote(do: Trellis.SelfCheckJob.t()), "the job",
     ~S|%Trellis.SelfCheckJob{state: :queued} = Trellis.self_check!(trellis, "widget_prices")|},
    {:self_check_job, [handle: quote(do: handle), id: quote(do: pos_integer)],
     quote(do: Trellis.SelfCheckJob.t() | nil), "the job or `nil`",
     "%Trellis.SelfCheckJob{} = Trellis.self_check_job!(trellis, id)"},
    {:quarantined, [handle: quote(do: handle)], quote(do: [Trellis.QuarantineEntry.t()]),
     "the entries", "[] = Trellis.quarantined!(trellis)"},
    {:quarantine_status, [handle: quote(do: handle), target: quote(do: String.t())],
     quote(do: [Trellis.QuarantineEntry.t()]), "the entries",
     ~S|[%Trellis.QuarantineEntry{}] = Trellis.quarantine_status!(trellis, "widget_prices.price")|},
    {:sample_quarantined,
     [
       {:handle, quote(do: handle)},
       {:target, quote(do: String.t())},
       {:opts, quote(do: keyword), []}
     ], quote(do: Trellis.SamplePage.t()), "the page",
     ~S|%Trellis.SamplePage{} = Trellis.sample_quarantined!(trellis, "widget_prices.price")|},
    {:poisoned_since, [handle: quote(do: handle), target: quote(do: String.t())],
     quote(do: DateTime.t() | nil), "the `DateTime` or `nil`",
     ~S|%DateTime{} = Trellis.poisoned_since!(trellis, "widget_prices.price")|},
    {:release_key,
     [
       {:handle, quote(do: handle)},
       {:transform, quote(do: String.t())},
       {:key, quote(do: [term])},
       {:opts, quote(do: keyword), []}
     ], :ok, "`:ok`", ~S|Trellis.release_key!(trellis, "widget_prices", [42])|},
    {:detect_capture_disruptions, [handle: quote(do: handle)], quote(do: [String.t()]),
     "the tables", "[] = Trellis.detect_capture_disruptions!(trellis)"},
    {:has_live_drain_workers, [handle: quote(do: handle)], quote(do: boolean), "the boolean",
     "true = Trellis.has_live_drain_workers!(trellis)"},
    {:has_live_staging_worker, [handle: quote(do: handle)], quote(do: boolean), "the boolean",
     "true = Trellis.has_live_staging_worker!(trellis)"},
    {:watermark_token, [handle: quote(do: handle)], quote(do: binary), "the token",
     "token = Trellis.watermark_token!(trellis)"},
    {:await_converged,
     [{:handle, quote(do: handle)}, {:token, quote(do: binary)}, {:opts, quote(do: keyword), []}],
     :ok, "`:ok`", "Trellis.await_converged!(trellis, Trellis.watermark_token!(trellis))"}
  ]

  for {name, args, value_type, returns, example} <- @bang_variants do
    bang = :"#{name}!"
    vars = for arg <- args, do: Macro.var(elem(arg, 0), __MODULE__)
    types = for arg <- args, do: elem(arg, 1)

    params =
      for {arg, var} <- Enum.zip(args, vars) do
        case arg do
          {_name, _type, default} -> quote(do: unquote(var) \\ unquote(default))
          {_name, _type} -> var
        end
      end

    @doc """
    Like `#{name}/#{length(args)}`, but returns #{returns} or raises `Trellis.Error`.

    ## Example

        #{String.replace(example, "\n", "\n    ")}
    """
    @spec unquote(bang)(unquote_splicing(types)) :: unquote(value_type)
    def unquote(bang)(unquote_splicing(params)),
      do: unwrap!(__MODULE__.unquote(name)(unquote_splicing(vars)))
  end

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

  def resolve(other), do: raise(ArgumentError, not_a_handle(other))

  defp not_a_handle(other),
    do: "expected a Trellis handle or the name of a supervised one, got: #{inspect(other)}"

  # A statement or a name of the wrong type is a bug in the calling code.
  defp text!(value, _what, _function) when is_binary(value), do: :ok

  defp text!(value, what, function),
    do: raise(ArgumentError, "#{function}: #{what} must be a string, got: #{inspect(value)}")

  defp unwrap!(:ok), do: :ok
  defp unwrap!({:ok, value}), do: value
  defp unwrap!({:error, %Error{} = error}), do: raise(error)
end
