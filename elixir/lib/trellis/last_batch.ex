defmodule Trellis.LastBatch do
  @moduledoc """
  The last batch of changes the drain applied to a transform's target, as
  `Trellis.status/2` reports it in `:last_batch`. Each batch takes the path
  estimated cheapest for it (see "Batch paths" in the engine spec):

    * `:delta` - the batch's delta rows applied to its groups (a `GROUP BY`
      whose changes are staged as deltas)
    * `:recompute` - the batch's keys recomputed from the sources
    * `:rebuild` - the whole target recomputed in one transaction, writing
      only the rows that differ (the table, its grants, indexes and the
      views on it stay; readers keep reading the committed rows until it
      commits); chosen when a batch is a large part of the target, such as
      after a bulk load or an `UPDATE` of every row

  Fields:

    * `:path` - `:delta`, `:recompute` or `:rebuild` (`:unknown` for a path
      newer than this package)
    * `:rows` - the keys of the batch (delta, recompute), or the target's
      rows a rebuild worked through
    * `:ms` - how long the batch took, in milliseconds (a float)
    * `:at` - when it was applied, a `DateTime`
    * `:reason` - the chooser's estimates, e.g.
      `"rebuild 20.0 ms < recompute 250.0 ms (2000 of 2000 backlog keys, 10000 target rows)"`
  """

  defstruct [:path, :at, rows: 0, ms: 0.0, reason: ""]

  @type t :: %__MODULE__{
          path: :delta | :recompute | :rebuild | :unknown,
          rows: non_neg_integer,
          ms: float,
          at: DateTime.t() | nil,
          reason: String.t()
        }

  @doc false
  @spec from_wire(map | nil) :: t | nil
  def from_wire(nil), do: nil

  def from_wire(m) do
    %__MODULE__{
      path: Trellis.Enums.batch_path(m["path"]),
      rows: m["rows"] || 0,
      ms: (m["ms"] || 0) * 1.0,
      at: Trellis.Enums.time(m["at"]),
      reason: m["reason"] || ""
    }
  end
end

defmodule Trellis.PathCost do
  @moduledoc """
  What one batch path has cost a transform, as `Trellis.status/2` lists it
  in `:path_costs` (one entry per path the drain has taken for it; see
  `Trellis.LastBatch` for the paths). The drain's chooser compares these
  measured costs when it picks the next batch's path.

    * `:path` - `:delta`, `:recompute` or `:rebuild`
    * `:us_per_row` - microseconds per row, averaged over its batches with
      the newest weighing half and older ones fading with age: per key for
      `:delta` and `:recompute`, per target row for `:rebuild` (a float)
    * `:batches` - batches taken by this path
    * `:failed_at` - for `:rebuild`: when one last failed (its batch then
      went by its keys, which finds and holds a failing key), a `DateTime`;
      the chooser takes no rebuild for ten minutes after. `nil` otherwise
  """

  defstruct [:path, :failed_at, us_per_row: 0.0, batches: 0]

  @type t :: %__MODULE__{
          path: :delta | :recompute | :rebuild | :unknown,
          us_per_row: float,
          batches: non_neg_integer,
          failed_at: DateTime.t() | nil
        }

  @doc false
  @spec from_wire(map) :: t
  def from_wire(m) do
    %__MODULE__{
      path: Trellis.Enums.batch_path(m["path"]),
      us_per_row: (m["us_per_row"] || 0) * 1.0,
      batches: m["batches"] || 0,
      failed_at: Trellis.Enums.time(m["failed_at"])
    }
  end
end
