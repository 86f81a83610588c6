defmodule Trellis.DrainFailure do
  @moduledoc """
  Work on a transform that keeps failing with nothing else charged for it,
  as `Trellis.status/2` reports it in `:drain_failure` (`nil` when none is
  open). The engine retries it with backoff (100 ms doubling to a minute)
  and clears it as soon as a retry succeeds; other transforms' drains and
  builds are not held up meanwhile.

    * `:unit` - what failed: `:pages` (a drain of ledger pages),
      `:build_range` (a range of the first build), `:rebuild` (a key range
      of a rebuild or column rebuild) or `:add_key` (the end of a first
      build); `:unknown` for a unit newer than this package
    * `:failure_class` - `:data_error` (a value the definition cannot
      compute or the target cannot hold, narrowed to the failing keys) or
      `:other` (a privilege revoked on the target, say)
    * `:since` - when it first failed, a `DateTime`
    * `:attempts` - how many times it has failed
    * `:sqlstate` - PostgreSQL's SQLSTATE, when it gave one
    * `:message` - PostgreSQL's message
    * `:parts` - what failed, at most 20: keys (`"key {7}"`) or key ranges
  """

  defstruct [:unit, :failure_class, :since, :sqlstate, :message, attempts: 0, parts: []]

  @type t :: %__MODULE__{
          unit: :pages | :build_range | :rebuild | :add_key | :unknown,
          failure_class: :data_error | :other | :unknown,
          since: DateTime.t() | nil,
          attempts: non_neg_integer,
          sqlstate: String.t() | nil,
          message: String.t(),
          parts: [String.t()]
        }

  @units %{
    "pages" => :pages,
    "build_range" => :build_range,
    "rebuild" => :rebuild,
    "add_key" => :add_key
  }
  @classes %{"data_error" => :data_error, "other" => :other}

  @doc false
  @spec from_wire(map | nil) :: t | nil
  def from_wire(nil), do: nil

  def from_wire(m) do
    %__MODULE__{
      unit: Map.get(@units, m["unit"], :unknown),
      failure_class: Map.get(@classes, m["failure_class"], :unknown),
      since: Trellis.Enums.time(m["since"]),
      attempts: m["attempts"] || 0,
      sqlstate: m["sqlstate"],
      message: m["message"],
      parts: m["parts"] || []
    }
  end
end
