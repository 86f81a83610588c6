defmodule EctoApp.Widget do
  @moduledoc false
  use Ecto.Schema

  schema "widgets" do
    field :name, :string
    field :price, :integer
  end
end
