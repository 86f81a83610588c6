defmodule Trellis.Owner do
  @moduledoc false

  # The process a handle's port is connected to. It does four things and no
  # caller's waiting:
  #
  #   * starts the port program (told the log level Trellis.LogBridge
  #     forwards), checks its hello, runs `connect`, and registers the handle
  #     in Trellis.Handles (for Trellis.Metrics and the log level);
  #   * routes each reply frame to the caller registered under its call id in
  #     the handle's ETS table (the body travels undecoded; the caller decodes
  #     it), hands each `log` event's frame, undecoded too, to
  #     Trellis.LogBridge, and every other event to the event handler
  #     (Trellis.Events);
  #   * every 200 ms, sweeps the table for callers that died mid-call and
  #     cancels their calls (a monitor per call would cost the owner a message
  #     per call; the sweep costs nothing while no caller dies);
  #   * when the port exits or the owner stops, answers every waiting caller
  #     at once with an error (exit status 3 is a :protocol error, any other a
  #     :connection error, and a shutdown a :validation error).
  #
  # A handle opened by Trellis.connect/1 belongs to the process that opened it
  # and shuts down when that process exits; one started by Trellis.start_link/1
  # belongs to its supervisor.

  use GenServer

  require Logger

  alias Trellis.{Error, Events, HandleState, Handles, LogBridge, Metrics, PortBinary, Protocol}

  @sweep_interval_ms 200
  @shutdown_grace_ms 5_000

  @doc false
  def sweep_interval_ms, do: @sweep_interval_ms

  @doc false
  def shutdown_grace_ms, do: @shutdown_grace_ms

  @doc false
  # `opts` are connect/1's options, validated, plus :caller (the pid that owns
  # an unsupervised handle, or nil).
  def start_link(opts) do
    case Keyword.get(opts, :name) do
      nil -> GenServer.start_link(__MODULE__, opts)
      name -> GenServer.start_link(__MODULE__, opts, name: name)
    end
  end

  @doc false
  def child_spec(opts) do
    %{
      id: __MODULE__,
      start: {__MODULE__, :start_link, [opts]},
      restart: :temporary,
      shutdown: @shutdown_grace_ms * 2
    }
  end

  @doc false
  def handle(owner), do: GenServer.call(owner, :handle)

  @doc false
  # Trellis.shutdown/1, run in the caller: the `shutdown` op makes the port
  # cancel what is in flight (each caller gets its :validation reply) and
  # exit, which stops the owner. An owner still there after the grace is
  # stopped, which closes the port.
  @spec shutdown(Trellis.t()) :: :ok | {:error, Error.t()}
  def shutdown(%Trellis{} = handle) do
    if HandleState.open?(handle.state), do: stop(handle), else: :ok
  end

  defp stop(handle) do
    ref = Process.monitor(handle.owner)
    HandleState.mark_shutting_down(handle.state)

    case Trellis.Call.call(handle, "shutdown", %{}) do
      {:ok, _} ->
        await_owner(ref, handle.owner)

      {:error, %Error{code: code}} when code in [:validation, :connection, :protocol] ->
        await_owner(ref, handle.owner)

      {:error, _} = error ->
        Process.demonitor(ref, [:flush])
        error
    end
  end

  defp await_owner(ref, owner) do
    receive do
      {:DOWN, ^ref, :process, _, _} -> :ok
    after
      @shutdown_grace_ms ->
        Process.demonitor(ref, [:flush])

        try do
          GenServer.stop(owner, :shutdown, @shutdown_grace_ms * 2)
        catch
          :exit, _already_gone -> :ok
        end
    end
  end

  ## Start: port, hello, connect

  @impl true
  def init(opts) do
    Process.flag(:trap_exit, true)
    deadline = deadline(opts[:timeout_ms])

    log_level = LogBridge.port_level()

    with {:ok, path} <- PortBinary.path(),
         {:ok, port} <- open_port(path, log_level, opts),
         {:ok, hello} <- await_hello(port, deadline),
         {:ok, handle} <- connect(port, hello, opts, deadline) do
      if name = opts[:name], do: :persistent_term.put({Trellis, name}, handle)
      Handles.register(handle)
      catch_up_log_level(handle, log_level)
      start_metrics(handle)
      caller_ref = if caller = opts[:caller], do: Process.monitor(caller)
      schedule_sweep()

      {:ok,
       %{
         handle: handle,
         port: port,
         caller_ref: caller_ref,
         event_handler: Events.handler(),
         instance: handle.instance
       }}
    else
      {:error, %Error{} = error} -> {:stop, {:shutdown, error}}
    end
  end

  defp open_port(path, log_level, opts) do
    record = if file = opts[:record], do: ["--record", file], else: []
    args = ["--log-level", log_level | record]
    options = [:binary, {:packet, 4}, :nouse_stdio, :exit_status, args: args]
    {:ok, Port.open({:spawn_executable, path}, options)}
  rescue
    error in ErlangError ->
      {:error, Error.new(:internal, "could not start #{path}: #{Exception.message(error)}")}
  end

  defp await_hello(port, deadline) do
    receive do
      {^port, {:data, body}} ->
        case Protocol.decode_message(body) do
          {:ok, {:event, "hello", payload}} -> check_hello(port, payload)
          _other -> refuse(port, "the port program's first frame was not a hello event")
        end

      {^port, {:exit_status, status}} ->
        {:error, HandleState.exit_error(status)}

      {:EXIT, ^port, _reason} ->
        {:error, HandleState.exit_error(HandleState.unknown_exit_status())}
    after
      remaining(deadline) ->
        refuse(port, "the port program sent no hello", :timeout)
    end
  end

  defp check_hello(port, %{"protocol" => [major, minor]} = hello)
       when is_integer(major) and is_integer(minor) do
    if major == Protocol.major_version(),
      do: {:ok, hello},
      else:
        refuse(
          port,
          "the port program speaks protocol #{major}.#{minor}; " <>
            "this package speaks #{Protocol.major_version()}.x"
        )
  end

  defp check_hello(port, _hello),
    do: refuse(port, "the port program's hello has no protocol version")

  defp refuse(port, message, code \\ :protocol) do
    Port.close(port)
    {:error, Error.new(code, message)}
  end

  # The connect request is the one call the owner makes itself: nothing else
  # is in flight yet, so it waits for the reply directly.
  defp connect(port, hello, opts, deadline) do
    state = HandleState.new()
    call_id = HandleState.next_call_id(state)

    args = %{
      "url" => opts[:url],
      "schema" => opts[:schema],
      "pool_size" => opts[:pool_size],
      "staging" => opts[:staging],
      "drain_threads" => opts[:drain_threads],
      "capture" => Atom.to_string(opts[:capture]),
      "application_name" => opts[:application_name]
    }

    budget = Trellis.Call.port_budget_ms(opts[:timeout_ms])
    write(port, Protocol.encode_request(call_id, "connect", args, budget))

    with {:ok, info} <- await_reply(port, call_id, deadline) do
      {:ok,
       %Trellis{
         owner: self(),
         port: port,
         table: :ets.new(__MODULE__, [:set, :public, write_concurrency: true]),
         state: state,
         timeout_ms: opts[:timeout_ms],
         name: opts[:name],
         instance: info["instance"],
         protocol_version: List.to_tuple(hello["protocol"]),
         engine_version: hello["engine_version"]
       }}
    end
  end

  defp await_reply(port, call_id, deadline) do
    receive do
      {^port, {:data, body}} ->
        case Protocol.decode_message(body) do
          {:ok, {:reply, ^call_id, {:ok, value}}} ->
            {:ok, value}

          {:ok, {:reply, ^call_id, {:error, wire}}} ->
            Port.close(port)
            {:error, Error.from_wire(wire)}

          {:ok, {:event, "log", _payload}} ->
            LogBridge.forward(body, nil)
            await_reply(port, call_id, deadline)

          {:ok, {:event, kind, payload}} ->
            Events.dispatch(Events.handler(), kind, payload, %{instance: nil})
            await_reply(port, call_id, deadline)

          _other ->
            refuse(port, "the port program answered connect with an unexpected frame")
        end

      {^port, {:exit_status, status}} ->
        {:error, HandleState.exit_error(status)}

      {:EXIT, ^port, _reason} ->
        {:error, HandleState.exit_error(HandleState.unknown_exit_status())}
    after
      remaining(deadline) -> refuse(port, "connect got no reply in time", :timeout)
    end
  end

  # Trellis.LogBridge.put_level/1 tells the registered handles; one that
  # changed the level between this port's start and its registration missed
  # this handle, so the owner passes the change on. Its reply is dropped (no
  # caller waits for it).
  defp catch_up_log_level(handle, started_with) do
    case LogBridge.port_level() do
      ^started_with ->
        :ok

      level ->
        call_id = HandleState.next_call_id(handle.state)
        write(handle.port, Protocol.encode_request(call_id, "set_log_level", %{"level" => level}))
    end
  end

  # connect/1 returns within the handle's budget, port start and hello
  # included, like every call.
  # From now on the port pushes its metric changes as `metrics` events, which
  # route/2 adds to the VM's registry; gauges go with this process. The
  # reply is dropped (no caller waits for it).
  defp start_metrics(handle) do
    Metrics.Store.watch(self())
    call_id = HandleState.next_call_id(handle.state)
    args = %{"interval_ms" => Metrics.push_interval_ms()}
    write(handle.port, Protocol.encode_request(call_id, "metrics_push", args))
  end

  defp deadline(timeout_ms), do: System.monotonic_time(:millisecond) + timeout_ms

  defp remaining(deadline), do: max(deadline - System.monotonic_time(:millisecond), 0)

  ## Running

  @impl true
  def handle_call(:handle, _from, state), do: {:reply, state.handle, state}

  @impl true
  def handle_info({port, {:data, body}}, %{port: port} = state) do
    route(body, state)
    {:noreply, state}
  end

  def handle_info({port, {:exit_status, status}}, %{port: port} = state) do
    port_gone(state, status, "exited with status #{status}")
  end

  # A port can also close without an exit status: a write into the pipe of a
  # program that was killed fails with EPIPE, and the runtime closes the port
  # with that reason.
  def handle_info({:EXIT, port, reason}, %{port: port} = state) do
    port_gone(state, HandleState.unknown_exit_status(), "closed (#{inspect(reason)})")
  end

  def handle_info(:sweep, state) do
    sweep(state)
    schedule_sweep()
    {:noreply, state}
  end

  def handle_info({:DOWN, ref, :process, _caller, _reason}, %{caller_ref: ref} = state) do
    {:stop, {:shutdown, :caller_exited}, state}
  end

  def handle_info(message, state) do
    Logger.warning("Trellis.Owner ignored an unexpected message: #{inspect(message)}")
    {:noreply, state}
  end

  defp port_gone(state, status, what) do
    HandleState.mark_exited(state.handle.state, status)

    # After a shutdown the exit is expected; anything else is worth a line.
    if HandleState.closed_error(state.handle.state).code != :validation do
      Logger.error("trellis-port (#{state.instance}) #{what}")
    end

    fail_waiting(state)
    {:stop, {:shutdown, {:port_exited, status}}, %{state | port: nil}}
  end

  defp route(body, state) do
    case Protocol.route(body) do
      {:reply, call_id} -> deliver(state.handle.table, call_id, body)
      :other -> other_frame(body, state)
    end
  end

  # A reply whose entry is gone belongs to a call that timed out or whose
  # caller died: it is dropped.
  defp deliver(table, call_id, reply) do
    case :ets.take(table, call_id) do
      [{^call_id, _pid, ref}] -> :erlang.send(ref, {ref, reply})
      [] -> :ok
    end
  end

  # Log lines can come in floods: they go on undecoded, so the owner spends
  # next to nothing on them and replies never wait behind them.
  defp other_frame(body, state) do
    if Protocol.log_frame?(body),
      do: LogBridge.forward(body, state.instance),
      else: decode_other(body, state)
  end

  defp decode_other(body, state) do
    case Protocol.decode_message(body) do
      {:ok, {:event, "metrics", payload}} ->
        Metrics.Store.apply_changes(state.instance, self(), payload)

      {:ok, {:event, kind, payload}} ->
        Events.dispatch(state.event_handler, kind, payload, %{instance: state.instance})

      {:ok, message} ->
        Logger.warning("trellis-port (#{state.instance}) sent an unexpected #{elem(message, 0)}")

      {:error, class} ->
        Logger.error(
          "trellis-port (#{state.instance}) sent a frame that did not decode: #{class}"
        )
    end
  end

  defp sweep(state) do
    table = state.handle.table

    dead =
      :ets.foldl(
        fn {call_id, pid, _ref}, acc ->
          if Process.alive?(pid), do: acc, else: [call_id | acc]
        end,
        [],
        table
      )

    for call_id <- dead do
      :ets.delete(table, call_id)
      write(state.port, Protocol.encode_cancel(call_id))
    end
  end

  # The port may have exited a moment ago (its exit_status is on its way):
  # a write that finds it closed is not an error here.
  defp write(port, iodata) do
    Port.command(port, iodata)
  rescue
    ArgumentError -> false
  end

  defp schedule_sweep, do: Process.send_after(self(), :sweep, @sweep_interval_ms)

  defp fail_waiting(state) do
    table = state.handle.table
    error = {:error, HandleState.closed_error(state.handle.state)}

    for {call_id, _pid, ref} <- :ets.tab2list(table) do
      :ets.delete(table, call_id)
      :erlang.send(ref, {ref, error})
    end

    :ok
  end

  ## Stopping

  # Called on a supervisor's shutdown, when the owning caller exits, and after
  # the port exited. With the port still running, the owner asks it to shut
  # down (it cancels the calls in flight, whose callers get their :validation
  # replies routed here), waits up to 5 s for it to exit, then closes it.
  @impl true
  def terminate(reason, state) do
    if state.port != nil do
      HandleState.mark_shutting_down(state.handle.state)
      call_id = HandleState.next_call_id(state.handle.state)
      write(state.port, Protocol.encode_request(call_id, "shutdown", %{}))
      await_exit(state, System.monotonic_time(:millisecond) + @shutdown_grace_ms)
    end

    HandleState.mark_stopped(state.handle.state)
    fail_waiting(state)
    Metrics.Store.drop_gauges(self())

    # A name whose handle will be restarted keeps its entry, so calls in the
    # meantime get the closed handle's error; a handle stopped on purpose
    # drops it.
    if state.handle.name != nil and stopped_on_purpose?(reason) do
      :persistent_term.erase({Trellis, state.handle.name})
    end

    :ok
  end

  defp await_exit(%{port: port} = state, deadline) do
    receive do
      {^port, {:data, body}} ->
        route(body, state)
        await_exit(state, deadline)

      {^port, {:exit_status, status}} ->
        HandleState.mark_exited(state.handle.state, status)

      {:EXIT, ^port, _reason} ->
        HandleState.mark_exited(state.handle.state, HandleState.unknown_exit_status())
    after
      remaining(deadline) -> Port.close(port)
    end
  end

  defp stopped_on_purpose?(reason),
    do: reason in [:normal, :shutdown, {:shutdown, :caller_exited}]
end
