defmodule EctoApp.Repo.Migrations.DefineInTransaction do
  use Ecto.Migration
  require Trellis.Migration

  # Calls the helper by its full name, without `use Trellis.Migration`, so
  # only the run-time check stands between it and the open transaction.
  def up do
    create table(:extras) do
      add :note, :text
    end

    Trellis.Migration.define("TRANSFORM widget_names FROM widgets SELECT name AS name")
  end

  def down, do: :ok
end
