defmodule Trellis.QuarantineEntry do
  @moduledoc """
  A column in quarantine, as `Trellis.quarantined/1` and
  `Trellis.quarantine_status/2` report it.

  A column is put in quarantine when its value fails for some rows (an
  expression PostgreSQL cannot compute for them, such as a division by
  zero, or a value the target refuses, such as one its CHECK constraint
  rejects). Its state is then `:paused` with `paused_kind: :quarantine`
  (see `Trellis.ColumnStatus`), yet only those rows are held back: their
  value in the column is `NULL`, each is recorded with its inputs and
  PostgreSQL's error (read them with `Trellis.sample_quarantined/3`), and
  the column's other values, the transform's other columns and every other
  key keep flowing. `RESUME TRANSFORM transform.column` clears the records
  and rebuilds the column; rows still failing put it in quarantine again.

    * `:target` - the column's address, `"transform.column"`: pass it back
      to the other quarantine functions and to `RESUME TRANSFORM`
    * `:transform`, `:column` - its parts
    * `:reason` - what failed first, and the fix
    * `:since` - when the column was put in quarantine, a `DateTime`
      (`Trellis.poisoned_since/2`)
    * `:rows` - how many rows are recorded as failing
  """

  defstruct [:target, :transform, :column, :reason, :since, rows: 0]

  @type t :: %__MODULE__{
          target: String.t(),
          transform: String.t(),
          column: String.t(),
          reason: String.t(),
          since: DateTime.t() | nil,
          rows: non_neg_integer
        }

  @doc false
  @spec from_wire(map) :: t
  def from_wire(m) do
    %__MODULE__{
      target: m["target"],
      transform: m["transform"],
      column: m["column"],
      reason: m["reason"],
      since: Trellis.Enums.time(m["since"]),
      rows: m["rows"] || 0
    }
  end
end
