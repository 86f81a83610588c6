defmodule EctoApp.Repo.Migrations.PauseGadgetLabels do
  use Ecto.Migration
  use Trellis.Migration

  @disable_ddl_transaction true

  # Paused by an operator, then dumped: it must load :waiting_to_backfill.
  def up do
    apply "PAUSE TRANSFORM gadget_labels"
    %Trellis.Status{status: :paused} = status "gadget_labels"
  end

  def down do
    apply "RESUME TRANSFORM gadget_labels"
  end
end
