defmodule EctoApp.Repo.Migrations.CreateWidgets do
  use Ecto.Migration

  def change do
    create table(:widgets) do
      add :name, :text
      add :price, :integer
    end
  end
end
