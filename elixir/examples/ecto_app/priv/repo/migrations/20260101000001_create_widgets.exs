defmodule EctoApp.Repo.Migrations.CreateWidgets do
  use Ecto.Migration

  def change do
    # The role widget_prices grants SELECT to (roles are the cluster's, so
    # ecto.drop leaves it and the next ecto.create finds it).
    execute(
      "DO 'BEGIN CREATE ROLE ecto_app_reader; EXCEPTION WHEN duplicate_object THEN NULL; END'",
      "SELECT 1"
    )

    create table(:widgets) do
      add :name, :text
      add :price, :integer
    end
  end
end
