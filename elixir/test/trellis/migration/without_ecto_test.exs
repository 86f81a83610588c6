defmodule Trellis.Migration.WithoutEctoTest do
  # This package's own build has no Ecto, like a host without ecto_sql:
  # Trellis.Migration is compiled only when the host has ecto_sql, and
  # everything else compiles and runs without it. The module's run beside
  # real Ecto is in elixir/examples/ecto_app (scripts/test-ecto.sh).
  use ExUnit.Case, async: true

  test "without ecto_sql there is no Trellis.Migration; the rest of the package is there" do
    refute Code.ensure_loaded?(Ecto.Migration)
    refute Code.ensure_loaded?(Trellis.Migration)

    {:ok, modules} = :application.get_key(:trellis_pg, :modules)
    refute Trellis.Migration in modules

    # What mix trellis.dump and the guard's statement comparison need.
    assert Trellis.Migration.Statement in modules
    assert Trellis.RepoHandle in modules
    assert Mix.Tasks.Trellis.Dump in modules
  end
end
