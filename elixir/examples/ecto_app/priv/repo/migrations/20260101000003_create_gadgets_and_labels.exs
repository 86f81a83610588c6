defmodule EctoApp.Repo.Migrations.CreateGadgetsAndLabels do
  use Ecto.Migration
  use Trellis.Migration

  @disable_ddl_transaction true

  # The table is created by a queued Ecto command; define flushes it first.
  # Guarded, so the migration can run again over what it already made
  # (scripts/test-ecto.sh deletes its schema_migrations row to prove it).
  def up do
    create_if_not_exists table(:gadgets) do
      add :label, :text
    end

    define "TRANSFORM gadget_labels FROM gadgets SELECT upper(label) AS label",
      if_not_defined: true
  end

  def down do
    apply "PAUSE TRANSFORM gadget_labels"
    apply "DROP TRANSFORM gadget_labels"
    drop table(:gadgets)
  end
end
