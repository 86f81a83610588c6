defmodule EctoApp.Repo.Migrations.DefineWithoutFlag do
  use Ecto.Migration
  use Trellis.Migration

  # No @disable_ddl_transaction: refused before any pending migration runs.
  def up do
    define "TRANSFORM extra_notes FROM extras SELECT note AS note"
  end

  def down do
    apply "DROP TRANSFORM extra_notes"
  end
end
