defmodule Trellis.Applied do
  @moduledoc """
  What a statement run by `Trellis.apply/2` or `Trellis.define/2` did.

    * `{:transform_defined, name}` - a `TRANSFORM` created its target
    * `:paused` - a `PAUSE TRANSFORM` (already paused is fine)
    * `{:resumed, addresses}` - a `RESUME TRANSFORM`; the addresses it
      resumed, `[]` when nothing named was paused
    * `{:dropped, name}` - a `DROP TRANSFORM`
    * `{:altered, name}` - an `ALTER TRANSFORM`

  ## Names you can pass back

  Every name here is in one form, the form the grammar reads: an SQL
  identifier, double-quoted only when it must be (it is not all lower-case
  letters, digits, `_` and `$`, starts with a digit, or is a keyword),
  never schema-qualified (a transform's name is its target table's name,
  unique in the instance; `Trellis.Status` gives the target's schema). So
  `"widget_prices"`, `~s("Widget Prices")`, `~s("it's")` or `~s("ünï")`.
  An address is a name or `name.column`, each part in that form.

  Every statement and every read (`Trellis.status/2`,
  `Trellis.request_backfill/2`, the names in `Trellis.Status` and
  `Trellis.Definition`) takes such a name back unchanged. The reads also
  accept the name schema-qualified (`app."Widget Prices"`), like a
  statement does.
  """

  alias Trellis.Error

  @type t ::
          {:transform_defined, String.t()}
          | :paused
          | {:resumed, [String.t()]}
          | {:dropped, String.t()}
          | {:altered, String.t()}

  @doc false
  @spec from_wire(term, String.t()) :: {:ok, t} | {:error, Error.t()}
  def from_wire(%{"tag" => "transform_defined", "target" => target}, _op),
    do: {:ok, {:transform_defined, target}}

  def from_wire(%{"tag" => "paused"}, _op), do: {:ok, :paused}

  def from_wire(%{"tag" => "resumed", "addresses" => addresses}, _op),
    do: {:ok, {:resumed, addresses}}

  def from_wire(%{"tag" => "dropped", "target" => target}, _op), do: {:ok, {:dropped, target}}
  def from_wire(%{"tag" => "altered", "target" => target}, _op), do: {:ok, {:altered, target}}

  def from_wire(other, op),
    do: {:error, Error.new(:protocol, "unexpected #{op} result #{inspect(other)}")}
end
