defmodule Trellis.CorrectingNode do
  @moduledoc """
  A relation under a source (a partition of a partitioned table, or an
  inheritance child) that appeared under it or left it, and that a
  transform's target is being corrected for, as `Trellis.status/2` lists it
  in `:correcting`. While any is listed, a transform that would be `:live`
  reads `:backfilling`. An entry goes once its keys are recomputed.

    * `:node` - the relation, as `"schema.table"` (quoted where needed)
    * `:since` - when the engine saw the change and started the correction,
      a `DateTime`; `nil` while the change waits to be applied: its capture
      is not installed yet (a lock that is busy, or a table the engine's
      role does not own, which a warning in the log names), so writes to it
      may be missing from the target and `await_converged/3` waits for it
    * `:keys_remaining` - target keys of the correction not recomputed yet
  """

  defstruct [:node, :since, keys_remaining: 0]

  @type t :: %__MODULE__{
          node: String.t(),
          since: DateTime.t() | nil,
          keys_remaining: non_neg_integer
        }

  @doc false
  @spec from_wire(map) :: t
  def from_wire(m) do
    %__MODULE__{
      node: m["node"],
      since: Trellis.Enums.time(m["since"]),
      keys_remaining: m["keys_remaining"] || 0
    }
  end
end
