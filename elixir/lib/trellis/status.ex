defmodule Trellis.Status do
  @moduledoc """
  What `Trellis.status/2` reports about one transform.

    * `:name` - the transform's name (its target table's unqualified
      name), in the form every read and statement takes back unchanged:
      quoted only when it must be (see `Trellis.Applied`)
    * `:target_table` - `"schema.table"` of the target
    * `:status` - `:waiting_to_backfill`, `:backfilling`, `:catching_up`,
      `:live` or `:paused` (`:unknown` for a state newer than this package)
    * `:paused_kind` - why it is paused: `:operator` (a PAUSE TRANSFORM),
      `:disruption` (its capture was changed outside Trellis, see
      `Trellis.detect_capture_disruptions/1`), `:schema_change` (a column or
      table it uses was dropped, renamed or changed; the reason names it;
      dropping or renaming a column it groups, joins or aggregates on makes
      writes to the table fail instead, see the engine spec's "Capture"),
      `:failure` (it came to hold 1000 keys: its definition or target fails
      for far more than a few rows; fix the cause, then RESUME rebuilds it),
      or another kind later versions add; `nil` when not paused
    * `:paused_reason` - a readable reason, `nil` when not paused
    * `:paused_at` - when it paused, a `DateTime`
    * `:columns` - one `Trellis.ColumnStatus` per value column
    * `:backlog_pages`, `:backlog_keys` - ledger pages (and the keys in them)
      waiting to be drained
    * `:capture_backlog` - capture rows of its source not yet staged
      (always 0 in logical mode: the slot's changes are not rows)
    * `:capture_mode` - how the instance captures writes: `:triggers` or
      `:logical` (a replication slot; the connect option `:capture`)
    * `:capture_fallback` - in logical mode, why the staging worker reads
      the replication slot by peeks rather than through a replication
      stream (a walsender), with the fix: a string, else `nil`. Peeks work
      but decode the WAL again at every batch, so capture is slower and
      costs the server more (bench/README.md, benchmark 8). Set when no
      replication connection can be made (pg_hba.conf, `max_wal_senders`,
      a pooler, a role without `REPLICATION`) or the server's
      `synchronous_standby_names` would match the stream (`'*'`); the
      stream is tried again every 10 s, and the field is `nil` again once
      it runs. Also set, with "Nothing to fix", while a slot more than
      32 MB of WAL behind is caught up by large peeks, which hand over a
      backlog faster than the stream (spec/engine.md "Catching up by
      peeks"); `nil` once the stream runs again. Only the handle whose staging worker reads the slot (a
      `staging: true` handle, the one elected) reports it; on other
      handles, and in trigger mode, it is `nil`
    * `:backfill` - a `Trellis.BackfillProgress`
    * `:last_applied_at` - when a drain or backfill last wrote the target
    * `:drain_failure` - a `Trellis.DrainFailure` while its work keeps
      failing with nothing charged or paused, else `nil`
    * `:held_keys` - how many keys the transform holds: keys that failed
      with nothing chargeable to a column (the WHERE fails for the row, the
      target refuses it), whose target rows stay as they were until
      `Trellis.release_key/4` recomputes them
    * `:capture_failure` - a `Trellis.CaptureFailure` while capture of a
      table it reads is disrupted (`kind: :disruption`), else `nil`; the
      transform is paused meanwhile, and `:paused_kind` keeps the kind of
      the pause (an operator's pause stays `:operator`). In logical mode
      also while the replication slot is lost (`:slot_lost`), a table it
      reads was removed from the publication (`:publication_altered`), or
      staging is behind on the slot (`:slot_behind`): those do not pause it
    * `:paused_upstream_columns` - for a transform reading another
      transform's target: each paused column upstream it reads, as
      `"target.column"`; while any is listed, a transform that would be
      `:live` reports `:catching_up`. `[]` when none is paused (and always
      for a transform that reads only plain tables)
    * `:source_index_gaps` - for a GROUP BY or JOIN target: each source
      index its maintenance needs and lacks, a `Trellis.SourceIndexGap`
      (table, columns, role, opted_out and the CREATE INDEX that closes
      it). `[]` when there is none (and always for a projection). A GROUP BY
      over a join lists its join's gaps (`:join_from`, `:join_joined`): it
      runs as a hidden join and the grouping over it, and its status is
      that of the pair (the worse state of the two, backlogs added)
    * `:correcting` - the partitions or inheritance children that appeared
      under a source the transform reads, or left it, and that its target
      is being corrected for, while it reads `:backfilling` for them: each a
      `Trellis.CorrectingNode` (node, since, keys_remaining). `[]` when none
    * `:row_security_tables` - each table (`"schema.table"`) the transform
      reads that has row-level security enabled, though the transform was
      not defined `WITHOUT ROW SECURITY` (security enabled after the
      define: a define over such a table is refused). The target's readers
      are not filtered by those tables' policies; the staging worker logs a
      warning while any is listed. `[]` when none
    * `:last_batch` - the last batch of changes the drain applied, a
      `Trellis.LastBatch`: its path (`:delta`, `:recompute` or `:rebuild`),
      rows, time and the chooser's reason; `nil` before the first
    * `:path_costs` - what each path the drain took cost per row, one
      `Trellis.PathCost` each, by path; `[]` before the first batch
  """

  defstruct [
    :name,
    :target_table,
    :status,
    :paused_kind,
    :paused_reason,
    :paused_at,
    :backfill,
    :last_applied_at,
    :drain_failure,
    :capture_failure,
    :last_batch,
    columns: [],
    path_costs: [],
    held_keys: 0,
    paused_upstream_columns: [],
    source_index_gaps: [],
    correcting: [],
    row_security_tables: [],
    backlog_pages: 0,
    backlog_keys: 0,
    capture_backlog: 0,
    capture_mode: :triggers,
    capture_fallback: nil
  ]

  @type t :: %__MODULE__{
          name: String.t(),
          target_table: String.t(),
          status: :waiting_to_backfill | :backfilling | :catching_up | :live | :paused | :unknown,
          paused_kind: atom | nil,
          paused_reason: String.t() | nil,
          paused_at: DateTime.t() | nil,
          columns: [Trellis.ColumnStatus.t()],
          backlog_pages: non_neg_integer,
          backlog_keys: non_neg_integer,
          capture_backlog: non_neg_integer,
          capture_mode: :triggers | :logical,
          capture_fallback: String.t() | nil,
          backfill: Trellis.BackfillProgress.t(),
          last_applied_at: DateTime.t() | nil,
          drain_failure: Trellis.DrainFailure.t() | nil,
          held_keys: non_neg_integer,
          capture_failure: Trellis.CaptureFailure.t() | nil,
          paused_upstream_columns: [String.t()],
          source_index_gaps: [Trellis.SourceIndexGap.t()],
          correcting: [Trellis.CorrectingNode.t()],
          row_security_tables: [String.t()],
          last_batch: Trellis.LastBatch.t() | nil,
          path_costs: [Trellis.PathCost.t()]
        }

  alias Trellis.Enums

  @doc false
  @spec from_wire(map) :: t
  def from_wire(m) do
    %__MODULE__{
      name: m["name"],
      target_table: m["target_table"],
      status: Enums.transform_state(m["status"]),
      paused_kind: Enums.paused_kind(m["paused_kind"]),
      paused_reason: m["paused_reason"],
      paused_at: Enums.time(m["paused_at"]),
      columns: Enum.map(m["columns"] || [], &Trellis.ColumnStatus.from_wire/1),
      backlog_pages: m["backlog_pages"] || 0,
      backlog_keys: m["backlog_keys"] || 0,
      capture_backlog: m["capture_backlog"] || 0,
      capture_mode: if(m["capture_mode"] == "logical", do: :logical, else: :triggers),
      capture_fallback: m["capture_fallback"],
      backfill: Trellis.BackfillProgress.from_wire(m["backfill"] || %{}),
      last_applied_at: Enums.time(m["last_applied_at"]),
      drain_failure: Trellis.DrainFailure.from_wire(m["drain_failure"]),
      held_keys: m["held_keys"] || 0,
      capture_failure: Trellis.CaptureFailure.from_wire(m["capture_failure"]),
      paused_upstream_columns: m["paused_upstream_columns"] || [],
      source_index_gaps:
        Enum.map(m["source_index_gaps"] || [], &Trellis.SourceIndexGap.from_wire/1),
      correcting: Enum.map(m["correcting"] || [], &Trellis.CorrectingNode.from_wire/1),
      row_security_tables: m["row_security_tables"] || [],
      last_batch: Trellis.LastBatch.from_wire(m["last_batch"]),
      path_costs: Enum.map(m["path_costs"] || [], &Trellis.PathCost.from_wire/1)
    }
  end
end

defmodule Trellis.ColumnStatus do
  @moduledoc """
  The state of one value column of a transform: `:live`, or `:paused` with
  a kind and a reason: `:operator` (`PAUSE TRANSFORM target.column`; the
  column keeps the values it has) or `:quarantine` (its value fails for
  some rows: those hold NULL and are listed by
  `Trellis.sample_quarantined/3`, every other value keeps flowing; see
  `Trellis.QuarantineEntry`). `RESUME TRANSFORM target.column` rebuilds it.
  """

  defstruct [:name, :state, :paused_kind, :paused_reason]

  @type t :: %__MODULE__{
          name: String.t(),
          state: :live | :paused | :unknown,
          paused_kind: atom | nil,
          paused_reason: String.t() | nil
        }

  @doc false
  @spec from_wire(map) :: t
  def from_wire(m) do
    %__MODULE__{
      name: m["name"],
      state: Trellis.Enums.column_state(m["state"]),
      paused_kind: Trellis.Enums.paused_kind(m["paused_kind"]),
      paused_reason: m["paused_reason"]
    }
  end
end

defmodule Trellis.BackfillProgress do
  @moduledoc """
  How far the build (or latest rebuild) of a target has come.

    * `:rows_done` - source rows recomputed so far (estimated: the build's
      size less the estimated rows of the key ranges it has left)
    * `:rows_total` - source rows when the backfill started (`nil` before)
    * `:started_at`, `:finished_at` - `DateTime`s, `nil` until then
    * `:columns` - while a column rebuild runs, the columns being rebuilt;
      `nil` for whole rows and once the build is done
  """

  defstruct [:rows_total, :started_at, :finished_at, :columns, rows_done: 0]

  @type t :: %__MODULE__{
          rows_done: non_neg_integer,
          rows_total: non_neg_integer | nil,
          started_at: DateTime.t() | nil,
          finished_at: DateTime.t() | nil,
          columns: [String.t()] | nil
        }

  @doc false
  @spec from_wire(map) :: t
  def from_wire(m) do
    %__MODULE__{
      rows_done: m["rows_done"] || 0,
      rows_total: m["rows_total"],
      started_at: Trellis.Enums.time(m["started_at"]),
      finished_at: Trellis.Enums.time(m["finished_at"]),
      columns: m["columns"]
    }
  end
end
