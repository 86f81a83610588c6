defmodule EctoApp.Repo.Migrations.RedefineGadgetLabels do
  use Ecto.Migration
  use Trellis.Migration

  @disable_ddl_transaction true

  # gadget_labels exists with upper(label): the guard must refuse, not skip.
  def up do
    define "TRANSFORM gadget_labels FROM gadgets SELECT lower(label) AS label",
      if_not_defined: true
  end

  def down, do: :ok
end
