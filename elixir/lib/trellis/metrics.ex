defmodule Trellis.Metrics do
  @push_interval_ms 500

  @moduledoc """
  The process-wide metrics registry: the metrics of every handle in this VM,
  as Prometheus text.

  `render_prometheus/0` renders them as one text exposition (format 0.0.4)
  for a `/metrics` route the host application already serves. It needs no
  handle, and Trellis opens no port or socket of its own.

      # a Phoenix controller
      def metrics(conn, _params) do
        conn
        |> put_resp_content_type("text/plain; version=0.0.4")
        |> send_resp(200, Trellis.Metrics.render_prometheus())
      end

  Every series carries the `trellis_instance` label
  (`"<database>/<catalog schema>"`, as in the log lines), so the handles of
  one VM stay apart. Two handles on the same instance add up into one series.

  ## One registry per VM

  The registry lives in this VM, in an ETS table the `:trellis_pg`
  application owns, not in any handle. Each handle's port program pushes
  what changed in its own registry as a `metrics` event (counter and
  histogram increases, gauge values; `spec/protocol.md` section 11), at
  most every #{@push_interval_ms} ms and only when something changed, and
  the handle's owner adds it to the table. So:

    * a render reads the table and never waits on a port program: a port
      that is stuck or busy leaves its last values in the render;
    * counters and histograms are kept per instance, so they only go up
      within the VM: a handle that shuts down keeps its counts in the
      render (its last changes are pushed as it stops), and a handle that
      restarts (a supervisor restarting it, a new `connect/1` to the same
      instance) adds to them rather than starting again from zero;
    * gauges belong to the handle that reported them and go away with it:
      a handle that shut down or crashed no longer counts its pool or
      workers.

  A render can lag a port's own registry by up to #{@push_interval_ms} ms;
  `flush/1` pushes one handle's changes at once (in tests, say).

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
    * `trellis_drain_batches_total{path}` - drained batches by the path
      the drain's chooser took (`delta`, `recompute`, `rebuild`; see
      `Trellis.LastBatch`), and `trellis_drain_rebuild_fallbacks_total` -
      rebuilds that failed, whose batch went by its keys instead
    * capture by logical decoding (`capture: :logical`), from the elected
      staging worker, 0 elsewhere: `trellis_capture_slot_lag_bytes` - WAL
      flushed past what staging has taken from the replication slot;
      `trellis_capture_slot_lag_seconds` - how long the slot's staged
      position has not moved while there is WAL to read;
      `trellis_capture_slot_retained_bytes` - WAL the slot holds back on the
      server; `trellis_capture_slots_replaced_total` - slots found lost
      (dropped, invalidated) and replaced, each rebuilding every transform;
      `trellis_capture_publication_repairs_total` - sources published again
      after a hand-made change to the publication, each rebuilding its
      readers (see `Trellis.CaptureFailure`)
    * `trellis_stage_writes_staged_total` - capture rows of drains' writes
      to a target another transform reads (the next stage of a grouped
      join, the next link of a chain), staged for that reader in the
      drain's own transaction, so the next stage's pages commit with the
      writes (trigger capture; with logical capture those writes reach the
      next stage through the slot)
    * `trellis_stage_wakes_total` - drains that woke the handle's staging
      worker at once because another transform reads their target and the
      drain left its writes to staging, so the next stage starts without
      waiting for staging's poll
    * `trellis_remote_wakes_total{role}` - wake-ups of the handle's workers
      that another handle's commit sent through PostgreSQL's LISTEN/NOTIFY:
      `role="drain"` when another handle's staging made pages,
      `role="staging"` when another handle drained a stage whose target the
      next stage reads. In a fleet it shows the wakes crossing handles; the
      workers' polls remain the fallback
    * `trellis_quarantined_columns_total{transform}`,
      `trellis_quarantined_rows_total{transform}`,
      `trellis_held_keys_total{transform}`,
      `trellis_drain_failures_total{transform}` - failures the handle's
      drain workers charged, per transform: columns they put in quarantine,
      failing rows they recorded, keys they began to hold, and drain
      failures they recorded (work that failed with nothing charged). These
      count events; what is open now is in `Trellis.status/2` and
      `Trellis.quarantined/1`, and in the `trellis_transform_*` gauges below.
      Each transform's four counters exist at 0 from when a handle with drain
      workers (or the elected staging worker) first reads the catalog after
      it starts, and within 5 s of a define, so an `increase(...[5m]) > 0`
      alert sees the first failure after a start of the VM

  ## What the catalog says of each transform

  The handle whose staging worker holds the instance's election reads
  every transform's `Trellis.status/2` every 5 s and reports it as gauges
  labelled `transform` (the target table's name, as the counters above).
  No other handle reports them, so each transform is one series in a fleet
  whichever node runs staging; when the election moves, the series move
  with it (aggregate with `max by (trellis_instance, transform)`). A
  dropped transform's gauges leave the render.

    * `trellis_transform_status{transform, status}` - 1 for the state the
      transform is in, 0 for the others (`waiting_to_backfill`,
      `backfilling`, `catching_up`, `live`, `paused`)
    * `trellis_transform_lag_seconds{transform}` - seconds, by the database
      server's clock, since the oldest write still waiting in its ledger was
      staged (about 10 ms after its commit while staging keeps up); 0 when
      none waits. `mix trellis.status` shows the same
    * `trellis_transform_backlog_pages{transform}`,
      `trellis_transform_backlog_keys{transform}`,
      `trellis_transform_capture_backlog_rows{transform}` - its backlog
    * `trellis_transform_held_keys{transform}`,
      `trellis_transform_quarantined_columns{transform}` - held keys and
      columns in quarantine now
    * `trellis_transform_drain_failure{transform}`,
      `trellis_transform_capture_disrupted{transform}` - 1 while a drain
      failure is open, while capture of a table it reads is disrupted
    * `trellis_transform_last_batch_seconds{transform, path}`,
      `trellis_transform_last_batch_rows{transform, path}` - the time and
      rows of its last batch, labelled with the path it took (status's
      `:last_batch`); `trellis_transform_path_cost_seconds_per_row{transform,
      path}` - what each path has cost it per row (status's `:path_costs`)
    * `trellis_transform_self_check_divergences{transform}` - divergences
      its latest finished self-check found (no series before one finished)
    * `trellis_transform_reports_timestamp_seconds` - when the reports were
      last read (Unix time)

  The package ships a Grafana dashboard and Prometheus alerting rules over
  these series, in its `observability/` directory (README, "Operating").
  """

  alias Trellis.{Call, Error}
  alias Trellis.Metrics.{Exposition, Store}

  @doc """
  Every handle's metrics in this VM as Prometheus text. Needs no handle, and
  reads only the VM's registry, so it takes the same time whatever the port
  programs are doing. With no handle ever connected the text is empty.

  ## Example

      text = Trellis.Metrics.render_prometheus()
      true = text =~ ~s(trellis_calls_total{trellis_instance="app/trellis")
  """
  @spec render_prometheus() :: String.t()
  def render_prometheus, do: Exposition.render(Store.families())

  @doc """
  Pushes the handle's pending metric changes into the VM's registry now: a
  render after `flush/1` returns counts every call the handle answered
  before it.

  ## Example

      :ok = Trellis.ping(trellis)
      :ok = Trellis.Metrics.flush(trellis)
  """
  @spec flush(Trellis.handle()) :: :ok | {:error, Error.t()}
  def flush(handle) do
    # The port writes the event before the reply, and the owner applies
    # events as it reads them: by the reply, the registry has the changes.
    with {:ok, nil} <- Call.call(handle, "metrics_push", %{}), do: :ok
  end

  @doc false
  # How often a port program pushes its changes; the owner asks for it once
  # connected.
  @spec push_interval_ms() :: pos_integer
  def push_interval_ms, do: @push_interval_ms
end
