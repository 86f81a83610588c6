defmodule Trellis.Enums do
  @moduledoc false
  # The closed sets of enum strings the port may send, mapped to atoms
  # compiled in here. Any other string becomes :unknown: no atom is ever
  # built from a string that came from the port or the database.

  @transform_states %{
    "waiting_to_backfill" => :waiting_to_backfill,
    "backfilling" => :backfilling,
    "catching_up" => :catching_up,
    "live" => :live,
    "paused" => :paused
  }

  @paused_kinds %{
    "operator" => :operator,
    "disruption" => :disruption,
    "schema_change" => :schema_change,
    "failure" => :failure
  }

  @column_states %{"live" => :live, "paused" => :paused}

  @doc false
  @spec transform_state(String.t() | nil) :: atom | nil
  def transform_state(nil), do: nil
  def transform_state(s), do: Map.get(@transform_states, s, :unknown)

  @doc false
  @spec paused_kind(String.t() | nil) :: atom | nil
  def paused_kind(nil), do: nil
  def paused_kind(s), do: Map.get(@paused_kinds, s, :unknown)

  @doc false
  @spec column_state(String.t() | nil) :: atom | nil
  def column_state(nil), do: nil
  def column_state(s), do: Map.get(@column_states, s, :unknown)

  @doc false
  # Epoch microseconds (the protocol's time encoding) to a UTC DateTime.
  @spec time(integer | nil) :: DateTime.t() | nil
  def time(nil), do: nil
  def time(us) when is_integer(us), do: DateTime.from_unix!(us, :microsecond)
end
