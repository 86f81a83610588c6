defmodule Trellis.Test.Database do
  @moduledoc false

  # A fresh database on the suite's cluster per test, so tests never see each
  # other's catalogs or tables and can run concurrently.

  alias Trellis.Test.SimplePG

  @doc "Creates a database and returns its URL."
  @spec create!(String.t()) :: String.t()
  def create!(prefix \\ "t") do
    base = Trellis.TestCluster.url()
    name = "#{prefix}_#{System.unique_integer([:positive])}"
    admin = SimplePG.connect!(base)
    SimplePG.query!(admin, "CREATE DATABASE #{name}")
    SimplePG.close(admin)
    url_for(base, name)
  end

  @doc "The URL of database `name` on the cluster of `base`."
  @spec url_for(String.t(), String.t()) :: String.t()
  def url_for(base, name) do
    uri = URI.parse(base)
    URI.to_string(%{uri | path: "/" <> name})
  end
end
