defmodule Trellis.Enums do
  @moduledoc false
  # The closed sets of enum strings the port may send, mapped to atoms
  # compiled in here. Any other string becomes :unknown: no atom is ever
  # built from a string that came from the port or the database. The engine
  # defines each set once (engine/include/trellis/states.h) and announces it
  # in its hello frame; test/trellis/enums_test.exs checks these match it.

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
    "failure" => :failure,
    "quarantine" => :quarantine
  }

  @column_states %{"live" => :live, "paused" => :paused}

  @batch_paths %{"delta" => :delta, "recompute" => :recompute, "rebuild" => :rebuild}

  @doc false
  # The wire names of each set, keyed as the port's hello frame keys them.
  @spec wire_names() :: %{String.t() => [String.t()]}
  def wire_names do
    %{
      "status" => Map.keys(@transform_states),
      "paused_kind" => Map.keys(@paused_kinds),
      "column_state" => Map.keys(@column_states)
    }
  end

  @doc false
  @spec transform_state(String.t() | nil) :: atom | nil
  def transform_state(nil), do: nil
  def transform_state(s), do: Map.get(@transform_states, s, :unknown)

  @doc false
  @spec batch_path(String.t() | nil) :: atom | nil
  def batch_path(nil), do: nil
  def batch_path(s), do: Map.get(@batch_paths, s, :unknown)

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
