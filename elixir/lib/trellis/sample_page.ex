defmodule Trellis.SamplePage do
  @moduledoc """
  One page of `Trellis.sample_quarantined/3`: the recorded failing rows of
  a quarantine target, in key order.

    * `:samples` - the rows, each a `Trellis.QuarantineSample`
    * `:next_cursor` - pass it as `cursor:` for the next page; `nil` on the
      last page. It is opaque: pass back exactly what was returned.

  Paging from the first page to the one whose `:next_cursor` is `nil`
  reaches every row recorded as failing when each page was read; rows
  recorded meanwhile after the cursor are included, rows before it are not.
  """

  defstruct samples: [], next_cursor: nil

  @type t :: %__MODULE__{
          samples: [Trellis.QuarantineSample.t()],
          next_cursor: String.t() | nil
        }

  @doc false
  @spec from_wire(map) :: t
  def from_wire(m) do
    %__MODULE__{
      samples: Enum.map(m["samples"] || [], &Trellis.QuarantineSample.from_wire/1),
      next_cursor: m["next_cursor"]
    }
  end
end

defmodule Trellis.QuarantineSample do
  @moduledoc """
  One recorded failing row of a column in quarantine.

    * `:target` - the column's address, `"transform.column"`
    * `:key` - the row's target key, its values as text in key-column order
      (the form `Trellis.release_key/4` also takes)
    * `:inputs` - the source row the value is computed from: a map of
      source column name to its value as text (`nil` for NULL); `%{}` when
      it could not be read (the row was deleted meanwhile)
    * `:sqlstate` - PostgreSQL's SQLSTATE (`"22012"`: division by zero)
    * `:error` - PostgreSQL's message
    * `:since` - when the row was first recorded, a `DateTime`
  """

  defstruct [:target, :sqlstate, :error, :since, key: [], inputs: %{}]

  @type t :: %__MODULE__{
          target: String.t(),
          key: [String.t()],
          inputs: %{String.t() => String.t() | nil},
          sqlstate: String.t() | nil,
          error: String.t(),
          since: DateTime.t()
        }

  @doc false
  @spec from_wire(map) :: t
  def from_wire(m) do
    %__MODULE__{
      target: m["target"],
      key: m["key"] || [],
      inputs: Map.new(m["inputs"] || [], fn i -> {i["name"], i["value"]} end),
      sqlstate: m["sqlstate"],
      error: m["error"],
      since: Trellis.Enums.time(m["since"])
    }
  end
end
