defmodule EctoApp.Repo.Migrations.DefineInChange do
  use Ecto.Migration
  use Trellis.Migration

  @disable_ddl_transaction true

  def change do
    define "TRANSFORM widget_names FROM widgets SELECT name AS name"
  end
end
