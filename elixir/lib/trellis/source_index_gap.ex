defmodule Trellis.SourceIndexGap do
  @moduledoc """
  A source index a transform's maintenance needs and lacks, as
  `Trellis.status/2` reports it in `:source_index_gaps`.

  Keeping a GROUP BY target current recomputes each group a write touches,
  which reads that group's source rows by its GROUP BY values. Without an
  index that serves the lookup, every such recompute scans the whole source
  table. A gap never stops a transform: it costs speed (bench/README.md,
  "Aggregates", measures how much).

    * `:table` - the source table, `"schema.table"`
    * `:columns` - what the index must cover, in order: column names, or
      bracketed expressions for grouped expressions
    * `:role` - `:group_by` (a GROUP BY's lookup of a group's rows);
      `:join_from` (a join's lookup, in the table a joined table is joined
      to, of the rows a joined row's change reaches, by that side's join
      columns); `:join_joined` (a join's lookup of the joined row by its
      join columns, served by the unique index the join needs, so open
      only if that index was dropped); `:unknown` for a role newer than
      this package
    * `:opted_out` - `true` when the transform was defined `WITHOUT SOURCE
      INDEX`: the scan is accepted, and the gap is listed for information
    * `:fix` - the `CREATE INDEX CONCURRENTLY` statement that closes it,
      quoted and ready to run (CONCURRENTLY, because the source is live and
      a plain CREATE INDEX blocks its writers while it builds; it cannot run
      inside a transaction block)

  The gap disappears from status as soon as an index that serves the lookup
  exists, whatever its name: one whose leading columns are the group
  columns, or an expression index on the grouped expressions. No restart
  is needed; status asks the planner each time.
  """

  defstruct [:table, :role, :fix, columns: [], opted_out: false]

  @type t :: %__MODULE__{
          table: String.t(),
          columns: [String.t()],
          role: :group_by | :join_from | :join_joined | :unknown,
          opted_out: boolean,
          fix: String.t()
        }

  @roles %{"group_by" => :group_by, "join_from" => :join_from, "join_joined" => :join_joined}

  @doc false
  @spec from_wire(map) :: t
  def from_wire(m) do
    %__MODULE__{
      table: m["table"],
      columns: m["columns"] || [],
      role: Map.get(@roles, m["role"], :unknown),
      opted_out: m["opted_out"] == true,
      fix: m["fix"]
    }
  end
end
