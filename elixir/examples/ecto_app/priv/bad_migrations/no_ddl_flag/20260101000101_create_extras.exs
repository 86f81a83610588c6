defmodule EctoApp.Repo.Migrations.CreateExtras do
  use Ecto.Migration

  def change do
    create table(:extras) do
      add :note, :text
    end
  end
end
