defmodule Trellis.SelfCheckReport do
  @moduledoc """
  The result of a finished `Trellis.self_check/3` job (its `:report` once
  its state is `:done`).

    * `:outcome` - `:clean` when nothing diverges; `:diverged` when some
      row does (see `:divergences`); `:unsettled` when nothing was found
      diverging but some keys could not be judged: their pending work did
      not drain within the check's bound (a minute), or the recompute
      itself failed on a range (`:failed_ranges`, also charged as a drain
      failure). Run the check again once the backlog is down.
    * `:rows_compared` - keys compared (a full check: every key on either
      side; a sample: the keys sampled)
    * `:divergence_count` - how many rows diverge, exact even when the list
      is cut
    * `:divergences` - `Trellis.Divergence` structs, at most 100, in key
      order of discovery
    * `:truncated` - `true` when `:divergences` holds fewer than
      `:divergence_count`
    * `:unsettled_keys` - keys still behind when the check stopped waiting
    * `:failed_ranges` - key ranges the recompute raised an error on,
      with the error
    * `:quarantined_columns` - columns not compared because they are
      quarantined (their values are withheld on purpose)
    * `:drain_failures` - the target's open `Trellis.DrainFailure`s when the
      check finished
  """

  defstruct outcome: :clean,
            rows_compared: 0,
            divergence_count: 0,
            divergences: [],
            truncated: false,
            unsettled_keys: 0,
            failed_ranges: [],
            quarantined_columns: [],
            drain_failures: []

  @type t :: %__MODULE__{
          outcome: :clean | :diverged | :unsettled | :unknown,
          rows_compared: non_neg_integer,
          divergence_count: non_neg_integer,
          divergences: [Trellis.Divergence.t()],
          truncated: boolean,
          unsettled_keys: non_neg_integer,
          failed_ranges: [String.t()],
          quarantined_columns: [String.t()],
          drain_failures: [Trellis.DrainFailure.t()]
        }

  @outcomes %{"clean" => :clean, "diverged" => :diverged, "unsettled" => :unsettled}

  @doc false
  @spec from_wire(map | nil) :: t | nil
  def from_wire(nil), do: nil

  def from_wire(m) do
    %__MODULE__{
      outcome: Map.get(@outcomes, m["outcome"], :unknown),
      rows_compared: m["rows_compared"] || 0,
      divergence_count: m["divergence_count"] || 0,
      divergences: Enum.map(m["divergences"] || [], &Trellis.Divergence.from_wire/1),
      truncated: m["truncated"] == true,
      unsettled_keys: m["unsettled_keys"] || 0,
      failed_ranges: m["failed_ranges"] || [],
      quarantined_columns: m["quarantined_columns"] || [],
      drain_failures: Enum.map(m["drain_failures"] || [], &Trellis.DrainFailure.from_wire/1)
    }
  end
end
