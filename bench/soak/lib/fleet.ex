defmodule Soak.Fleet do
  @moduledoc false

  # The fleet: N BEAM nodes, each an OS process started with `elixir
  # --sname` running bench/soak/node.exs, and the calls the conductor makes
  # on them through Erlang distribution. A node that is killed is started
  # again under the same name; a call goes to the first node that answers.

  use GenServer

  @handle Soak.Trellis
  @connect_timeout_ms 300_000

  defstruct [:config, ports: %{}]

  @doc """
  Starts the fleet's keeper and its `config.nodes` nodes, and waits until
  each answers with a handle. `config` holds :nodes, :url, :dir, :cookie,
  :prefix, :ebin, :port_path.
  """
  def start_link(config), do: GenServer.start_link(__MODULE__, config, name: __MODULE__)

  @doc "The node names, in order."
  def nodes do
    {prefix, count} = :persistent_term.get({__MODULE__, :names})
    Enum.map(1..count, &node_name(prefix, &1))
  end

  @doc "SIGKILLs node `i`'s BEAM (its port program dies with it: its stdin closes)."
  def kill_node(i), do: GenServer.call(__MODULE__, {:kill_node, i}, 30_000)

  @doc "Starts node `i` again and waits until its handle answers."
  def start_node(i), do: GenServer.call(__MODULE__, {:start_node, i}, @connect_timeout_ms + 5_000)

  @doc "SIGKILLs the port program of node `i`'s handle; its supervisor starts a new one."
  def kill_port(i) do
    node = node_name(i)

    {:ok, handle} = :erpc.call(node, Trellis, :resolve, [@handle], 10_000)
    {:os_pid, os_pid} = :erpc.call(node, Port, :info, [handle.port, :os_pid], 10_000)
    {_, 0} = System.cmd("kill", ["-KILL", Integer.to_string(os_pid)])
    os_pid
  end

  @doc """
  Calls `Trellis.fun(handle, args...)` on the first node (in a random order)
  whose handle answers without a connection failure. Returns the call's
  result, or `{:error, :no_node}` when none does.
  """
  def call(fun, args, timeout_ms \\ 60_000) do
    nodes() |> Enum.shuffle() |> try_nodes(fun, args, timeout_ms)
  end

  defp try_nodes([], _fun, _args, _timeout_ms), do: {:error, :no_node}

  defp try_nodes([node | rest], fun, args, timeout_ms) do
    result =
      try do
        :erpc.call(node, Trellis, fun, [@handle | args], timeout_ms + 5_000)
      catch
        kind, reason -> {:error, {:erpc, kind, reason}}
      end

    case result do
      {:error, {:erpc, _, _}} ->
        try_nodes(rest, fun, args, timeout_ms)

      {:error, %{code: code}} when code in [:connection, :validation] and rest != [] ->
        try_nodes(rest, fun, args, timeout_ms)

      other ->
        other
    end
  end

  @doc "Stops every node (SIGTERM to each BEAM)."
  def stop, do: GenServer.call(__MODULE__, :stop, 60_000)

  defp node_name(i), do: node_name(elem(:persistent_term.get({__MODULE__, :names}), 0), i)

  defp node_name(prefix, i) do
    [_, host] = String.split(Atom.to_string(Node.self()), "@")
    :"#{prefix}_n#{i}@#{host}"
  end

  ## Server

  @impl true
  def init(config) do
    :persistent_term.put({__MODULE__, :names}, {config.prefix, config.nodes})
    Process.flag(:trap_exit, true)
    state = %__MODULE__{config: config}
    state = Enum.reduce(1..config.nodes, state, &launch(&2, &1))
    Enum.each(1..config.nodes, &await_handle(node_name(&1)))
    {:ok, state}
  end

  @impl true
  def handle_call({:kill_node, i}, _from, state) do
    os_pid = beam_pid(node_name(i))
    {_, 0} = System.cmd("kill", ["-KILL", os_pid])
    await_exit(state.ports[i])
    {:reply, :ok, %{state | ports: Map.delete(state.ports, i)}}
  end

  def handle_call({:start_node, i}, _from, state) do
    state = launch(state, i)
    await_handle(node_name(i))
    {:reply, :ok, state}
  end

  def handle_call(:stop, _from, state) do
    for {i, port} <- state.ports do
      try do
        System.cmd("kill", ["-TERM", beam_pid(node_name(i))])
      catch
        _, _ -> :ok
      end

      await_exit(port)
    end

    {:reply, :ok, %{state | ports: %{}}}
  end

  @impl true
  def handle_info({_port, {:data, _}}, state), do: {:noreply, state}
  def handle_info({_port, {:exit_status, _}}, state), do: {:noreply, state}
  def handle_info({:EXIT, _port, _}, state), do: {:noreply, state}

  defp launch(state, i) do
    c = state.config
    log = Path.join(c.dir, "node#{i}.log")

    command =
      "exec elixir --sname #{c.prefix}_n#{i} --cookie #{c.cookie} -pa #{c.ebin} " <>
        "--erl '-kernel prevent_overlapping_partitions false' " <>
        "#{Path.join(__DIR__, "../node.exs")} >>#{log} 2>&1"

    env = [
      {~c"SOAK_URL", String.to_charlist(c.url)},
      {~c"SOAK_CONDUCTOR", Atom.to_charlist(Node.self())},
      {~c"SOAK_APP_NAME", ~c"soak_trellis_n#{i}"},
      {~c"SOAK_RECORD_PREFIX", String.to_charlist(Path.join(c.dir, "n#{i}"))},
      {~c"TRELLIS_PORT_PATH", String.to_charlist(c.port_path)}
    ]

    port =
      Port.open({:spawn_executable, "/bin/sh"}, [:exit_status, args: ["-c", command], env: env])

    %{state | ports: Map.put(state.ports, i, port)}
  end

  defp beam_pid(node), do: :erpc.call(node, System, :pid, [], 10_000)

  defp await_exit(nil), do: :ok

  defp await_exit(port) do
    receive do
      {^port, {:exit_status, _}} -> :ok
    after
      30_000 -> raise "a soak node did not exit within 30 s of its kill"
    end
  end

  # Ready once the node answers a ping through its handle.
  defp await_handle(node, deadline \\ nil) do
    deadline = deadline || System.monotonic_time(:millisecond) + @connect_timeout_ms

    ready? =
      try do
        :erpc.call(node, Trellis, :ping, [@handle], 10_000) == :ok
      catch
        _, _ -> false
      end

    cond do
      ready? -> :ok
      System.monotonic_time(:millisecond) > deadline -> raise "soak node #{node} did not come up"
      true -> Process.sleep(200) && await_handle(node, deadline)
    end
  end
end
