defmodule EctoApp.Gadget do
  @moduledoc false
  use Ecto.Schema

  schema "gadgets" do
    field :label, :string
  end
end
