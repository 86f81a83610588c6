defmodule Trellis.MixProject do
  use Mix.Project

  # The release version: the one place it is written. CMake reads it from
  # here for the engine (trellis-port reports it in its hello event), and
  # scripts/release.sh names the binaries after it.
  @version "0.1.0-alpha"
  @source_url "https://github.com/trellis-pg/trellis"

  def project do
    [
      app: :trellis_pg,
      version: @version,
      elixir: "~> 1.14",
      elixirc_paths: elixirc_paths(Mix.env()),
      # Runs after :elixir, whose output provides it (lib/mix/tasks/).
      compilers: Mix.compilers() ++ [:trellis_port],
      start_permanent: Mix.env() == :prod,
      deps: [],
      # The compiler downloads with :httpc and :public_key and hashes with :crypto at
      # compile time only; the running application never calls them.
      xref: [exclude: [:httpc, :public_key, :crypto]],
      description: "Derived tables kept up to date inside PostgreSQL, driven from Elixir.",
      package: package(),
      source_url: @source_url,
      docs: [main: "Trellis", source_ref: "v#{@version}"]
    ]
  end

  def application do
    [
      mod: {Trellis.Application, []},
      extra_applications: [:logger]
    ]
  end

  # What the Hex package carries (scripts/release.sh stages it): the Elixir
  # code, the C++ tree for source builds (native/, copied from the repository
  # root), the checksum file that vouches for the release binaries, the
  # Grafana dashboard and Prometheus alerting rules (observability/), and, in
  # a bundled package, those binaries (bin/). No build trees, no test data.
  defp package do
    [
      name: "trellis_pg",
      files:
        ~w(lib native observability mix.exs .formatter.exs README.md LICENSE checksum-trellis_pg.exs) ++
          if(File.dir?(Path.join(__DIR__, "bin")), do: ["bin"], else: []),
      licenses: ["Apache-2.0"],
      links: %{"GitHub" => @source_url, "Releases" => "#{@source_url}/releases"}
    ]
  end

  defp elixirc_paths(:test), do: ["lib", "test/support"]
  defp elixirc_paths(_), do: ["lib"]
end
