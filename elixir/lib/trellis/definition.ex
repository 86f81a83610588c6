defmodule Trellis.Definition do
  @moduledoc """
  One transform as `Trellis.definitions/1` lists it: its name, target table,
  the canonical `TRANSFORM` statement that would create it as it is now
  (ALTERs included), its state, and when it was defined.

  `:name` is in the form every read and statement takes back unchanged
  (see `Trellis.Applied`); `:target_table` is `"schema.table"` as the
  catalog holds them, unquoted.
  """

  defstruct [:name, :target_table, :statement, :status, :created_at]

  @type t :: %__MODULE__{
          name: String.t(),
          target_table: String.t(),
          statement: String.t(),
          status: atom,
          created_at: DateTime.t() | nil
        }

  @doc false
  @spec from_wire(map) :: t
  def from_wire(m) do
    %__MODULE__{
      name: m["name"],
      target_table: m["target_table"],
      statement: m["statement"],
      status: Trellis.Enums.transform_state(m["status"]),
      created_at: Trellis.Enums.time(m["created_at"])
    }
  end
end
