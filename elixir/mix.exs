defmodule Trellis.MixProject do
  use Mix.Project

  @version "0.1.0"

  def project do
    [
      app: :trellis_pg,
      version: @version,
      elixir: "~> 1.14",
      elixirc_paths: elixirc_paths(Mix.env()),
      start_permanent: Mix.env() == :prod,
      deps: [],
      description: "Derived tables kept up to date inside PostgreSQL, driven from Elixir.",
      docs: [main: "Trellis", source_ref: "v#{@version}"]
    ]
  end

  def application do
    [
      mod: {Trellis.Application, []},
      extra_applications: [:logger]
    ]
  end

  defp elixirc_paths(:test), do: ["lib", "test/support"]
  defp elixirc_paths(_), do: ["lib"]
end
