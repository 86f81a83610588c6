defmodule Trellis.Metrics.Store do
  @moduledoc false

  # The VM's metrics registry: one ETS table, owned by this process (started
  # with the :trellis_pg application, so it outlives every handle).
  #
  # Writers are the handles' owners: each applies its port's `metrics`
  # events (spec/protocol.md section 11: counter and histogram increases,
  # gauge values, and gauge series that went) with apply_changes/3, in the
  # owner process. Readers (a scrape) read the table and never wait on a
  # port or a process.
  #
  #   {{:family, name}, type, help, label_names, bounds}
  #   {{:counter, name, instance, label_values}, total}
  #   {{:gauge, name, instance, label_values, owner}, value}
  #   {{:histogram, name, instance, label_values}, count, cumulative...}
  #   {{:histogram_sum, name, instance, label_values}, sum}
  #
  # Counters and histograms are keyed by instance, not by handle: a handle
  # that restarts adds to the same totals, so they only go up within the VM.
  # Gauges are keyed by the owner too, and go when it goes (terminate/2 of
  # the owner drops them; a monitor here catches an owner that was killed).

  use GenServer

  @table __MODULE__

  @type family :: %{
          type: String.t(),
          help: String.t(),
          labels: [String.t()],
          buckets: [number],
          series: %{[String.t()] => term}
        }

  @doc false
  def start_link(_opts), do: GenServer.start_link(__MODULE__, nil, name: __MODULE__)

  @doc "Drops `owner`'s gauges when it exits, however it exits."
  @spec watch(pid) :: :ok
  def watch(owner), do: GenServer.cast(__MODULE__, {:watch, owner})

  @doc "Removes the gauges `owner` reported."
  @spec drop_gauges(pid) :: :ok
  def drop_gauges(owner) do
    :ets.match_delete(@table, {{:gauge, :_, :_, :_, owner}, :_})
    :ok
  rescue
    ArgumentError -> :ok
  end

  @doc """
  Applies one `metrics` event's payload, reported by `owner` for `instance`.
  Malformed families and series are skipped.
  """
  @spec apply_changes(String.t(), pid, map) :: :ok
  def apply_changes(instance, owner, %{"families" => families}) when is_list(families) do
    for %{"name" => name, "type" => type, "series" => series} = family <- families,
        is_binary(name) and type in ["counter", "gauge", "histogram"] and is_list(series) do
      buckets = if type == "histogram", do: numbers(family["buckets"]), else: []

      :ets.insert_new(
        @table,
        {{:family, name}, type, text(family["help"]), strings(family["labels"]), buckets}
      )

      for %{"labels" => labels} = change <- series, is_list(labels) do
        apply_series(type, name, instance, owner, strings(labels), change, length(buckets))
      end
    end

    :ok
  rescue
    # The table is gone (the application is stopping): nothing to keep.
    ArgumentError -> :ok
  end

  def apply_changes(_instance, _owner, _payload), do: :ok

  defp apply_series("counter", name, instance, _owner, labels, %{"value" => delta}, _)
       when is_number(delta),
       do: add({:counter, name, instance, labels}, delta)

  defp apply_series("gauge", name, instance, owner, labels, %{"value" => value}, _)
       when is_number(value),
       do: :ets.insert(@table, {{:gauge, name, instance, labels, owner}, value})

  # A gauge series the port no longer has (a dropped transform's reports).
  defp apply_series("gauge", name, instance, owner, labels, %{"value" => nil}, _),
    do: :ets.delete(@table, {:gauge, name, instance, labels, owner})

  defp apply_series("histogram", name, instance, _owner, labels, change, size) do
    with %{"counts" => counts, "sum" => sum, "count" => count} <- change,
         true <- is_list(counts) and length(counts) == size and is_integer(count),
         true <- Enum.all?(counts, &is_integer/1) and is_number(sum) do
      key = {:histogram, name, instance, labels}
      ops = [{2, count} | Enum.with_index(counts, fn c, i -> {i + 3, c} end)]
      :ets.update_counter(@table, key, ops, List.to_tuple([key, 0 | List.duplicate(0, size)]))
      add({:histogram_sum, name, instance, labels}, sum)
    end
  end

  defp apply_series(_type, _name, _instance, _owner, _labels, _change, _size), do: :ok

  # Integers add atomically; a float (a histogram's sum, a counter read as a
  # float) is added by compare-and-swap, since several owners may report the
  # same instance.
  defp add(key, delta) when is_integer(delta) do
    :ets.update_counter(@table, key, delta, {key, 0})
  rescue
    ArgumentError -> add_float(key, delta)
  end

  defp add(key, delta), do: add_float(key, delta)

  defp add_float(key, delta) do
    case :ets.lookup(@table, key) do
      [] ->
        :ets.insert_new(@table, {key, delta}) || add_float(key, delta)

      [{^key, old}] ->
        swapped = :ets.select_replace(@table, [{{key, old}, [], [{:const, {key, old + delta}}]}])
        if swapped == 1, do: true, else: add_float(key, delta)
    end
  end

  @doc """
  Every family with its series, each keyed by `[instance | label_values]`;
  the gauges of several handles on one instance add up.
  """
  @spec families() :: %{String.t() => family}
  def families do
    rows = :ets.tab2list(@table)

    families =
      for {{:family, name}, type, help, labels, buckets} <- rows, into: %{} do
        {name, %{type: type, help: help, labels: labels, buckets: buckets, series: %{}}}
      end

    Enum.reduce(rows, families, fn row, acc ->
      case series(row) do
        {name, key, value} when is_map_key(acc, name) ->
          update_in(
            acc,
            [name, :series],
            &Map.update(&1, key, value, fn old -> merge(old, value) end)
          )

        _other ->
          acc
      end
    end)
  end

  defp series({{:counter, name, instance, labels}, value}), do: {name, [instance | labels], value}

  defp series({{:gauge, name, instance, labels, _owner}, value}),
    do: {name, [instance | labels], value}

  defp series({{:histogram_sum, name, instance, labels}, sum}),
    do: {name, [instance | labels], %{sum: sum}}

  defp series(row) when elem(elem(row, 0), 0) == :histogram do
    [{:histogram, name, instance, labels}, count | counts] = Tuple.to_list(row)
    {name, [instance | labels], %{count: count, counts: counts}}
  end

  defp series(_family), do: nil

  defp merge(a, b) when is_number(a) and is_number(b), do: a + b
  defp merge(a, b) when is_map(a) and is_map(b), do: Map.merge(a, b)

  ## The process: owns the table, watches owners

  @impl true
  def init(nil) do
    :ets.new(@table, [
      :set,
      :public,
      :named_table,
      read_concurrency: true,
      write_concurrency: true
    ])

    {:ok, nil}
  end

  @impl true
  def handle_cast({:watch, owner}, state) do
    Process.monitor(owner)
    {:noreply, state}
  end

  @impl true
  def handle_info({:DOWN, _ref, :process, owner, _reason}, state) do
    drop_gauges(owner)
    {:noreply, state}
  end

  defp strings(list) when is_list(list), do: Enum.map(list, &to_string/1)
  defp strings(_other), do: []
  defp numbers(list) when is_list(list), do: Enum.filter(list, &is_number/1)
  defp numbers(_other), do: []
  defp text(value) when is_binary(value), do: value
  defp text(_other), do: ""
end
