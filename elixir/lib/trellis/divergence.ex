defmodule Trellis.Divergence do
  @moduledoc """
  One row of a target that differs from a fresh recompute of its
  definition, as a finished `Trellis.self_check/3` job reports it in
  `Trellis.SelfCheckReport`'s `:divergences`.

    * `:kind` - `:missing` (the recompute has the row, the target does
      not), `:extra` (the target has a row the recompute does not) or
      `:differs` (both have it, some columns differ)
    * `:key` - the target key, one string per key column, in order; `nil`
      for a NULL element (a GROUP BY key may be NULL)
    * `:columns` - the columns that differ, each a map with `:name`,
      `:target` (the target's value as text, `nil` for NULL or no row) and
      `:recomputed` (the recomputed value, the same way). A missing or extra
      row lists every value column.
    * `:fix` - what repairs it: `Trellis.request_backfill/2` of the target,
      or `RESUME TRANSFORM target.column` when a column it involves is paused

  A divergence is reported only once no work that could still change its
  key was pending (see "Self-check" in the engine's spec): a row that was
  merely behind the writes is not one.
  """

  defstruct [:kind, :fix, key: [], columns: []]

  @type column :: %{name: String.t(), target: String.t() | nil, recomputed: String.t() | nil}

  @type t :: %__MODULE__{
          kind: :missing | :extra | :differs | :unknown,
          key: [String.t() | nil],
          columns: [column],
          fix: String.t()
        }

  @kinds %{"missing" => :missing, "extra" => :extra, "differs" => :differs}

  @doc false
  @spec from_wire(map) :: t
  def from_wire(m) do
    %__MODULE__{
      kind: Map.get(@kinds, m["kind"], :unknown),
      key: m["key"] || [],
      columns:
        for c <- m["columns"] || [] do
          %{name: c["name"], target: c["target"], recomputed: c["recomputed"]}
        end,
      fix: m["fix"]
    }
  end
end
