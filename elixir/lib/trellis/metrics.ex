defmodule Trellis.Metrics do
  @moduledoc """
  The metrics of every handle in this VM, as Prometheus text.

  Each handle's port program keeps its own counters, gauges and histograms.
  `render_prometheus/0` gathers them from every live handle and merges them
  into one text exposition (format 0.0.4) for a `/metrics` route the host
  application already serves. Trellis opens no port or socket of its own.

      # a Phoenix controller
      def metrics(conn, _params) do
        conn
        |> put_resp_content_type("text/plain; version=0.0.4")
        |> send_resp(200, Trellis.Metrics.render_prometheus())
      end

  Every series carries the `trellis_instance` label
  (`"<database>/<catalog schema>"`, as in the log lines), so the handles of
  one VM stay apart. Two handles on the same instance add up into one series.

  ## Series

    * `trellis_calls_total{op, result}` - calls answered, by op and result
      (`ok`, an error code such as `timeout`, or `cancelled`); ops the port
      does not know count as `op="unknown"`
    * `trellis_call_duration_seconds{op}` - histogram of the time from the
      port reading a request to its reply
    * `trellis_pool_connections_open`, `trellis_pool_connections_in_use`,
      `trellis_pool_connections_max` - the call pool's database sessions
    * `trellis_port_frames_total{direction}`, `trellis_port_bytes_total{direction}` -
      protocol traffic, `in` (to the port) and `out`
    * `trellis_log_lines_total{level}`, `trellis_log_lines_dropped_total` -
      engine log lines sent to the VM, and dropped because it fell behind
      (see `Trellis.LogBridge`)
    * `trellis_workers{role}` - staging and drain worker threads running in
      the handle; `trellis_staging_elected` - 1 while the handle's staging
      worker holds the instance's election
    * `trellis_drain_pages_total`, `trellis_drain_keys_total`,
      `trellis_drain_pages_failed_total`, `trellis_capture_rows_staged_total`,
      `trellis_backfill_rows_total` - the background workers' progress
    * `trellis_metrics_scrape_errors` - 1 for a handle that did not answer
      this render in time, else 0

  ## Bounded time

  The handles are asked in parallel, and each has 1 second to answer. A
  handle whose port program is stuck or gone is left out of the render: its
  `trellis_metrics_scrape_errors` series reads 1 and a comment line names it.
  A render therefore takes a little over 1 second at worst.
  """

  alias Trellis.{Call, Handles}
  alias Trellis.Metrics.Exposition

  @budget_ms 1_000

  @doc """
  Every live handle's metrics as Prometheus text. Needs no handle; with no
  handle running it renders only the scrape-errors family.

  ## Example

      text = Trellis.Metrics.render_prometheus()
      true = text =~ ~s(trellis_calls_total{trellis_instance="app/trellis")
  """
  @spec render_prometheus() :: String.t()
  def render_prometheus do
    handles = Handles.list()

    results =
      handles
      |> Task.async_stream(&Call.call(&1, "metrics", %{}, timeout_ms: @budget_ms),
        timeout: @budget_ms,
        on_timeout: :kill_task,
        max_concurrency: max(length(handles), 1)
      )
      |> Enum.zip(handles)
      |> Enum.map(fn {result, handle} -> {handle.instance || "-", outcome(result)} end)

    Exposition.render(results, @budget_ms)
  end

  defp outcome({:ok, {:ok, %{"families" => families}}}) when is_list(families),
    do: {:ok, families}

  defp outcome({:ok, {:ok, _other}}), do: {:error, "its metrics reply had no families"}
  defp outcome({:ok, {:error, error}}), do: {:error, Exception.message(error)}
  defp outcome({:exit, :timeout}), do: {:error, "no answer within #{@budget_ms} ms"}
  defp outcome({:exit, reason}), do: {:error, "the request failed: #{inspect(reason)}"}
end
