defmodule EctoApp.MixProject do
  use Mix.Project

  # A Phoenix-style app as a new user builds it, used by scripts/test-ecto.sh
  # to drive Trellis.Migration and mix trellis.dump with real Ecto, Postgrex
  # and mix tasks. The Hex registry is out of reach, so Ecto and its
  # siblings come from a local source mirror (see hexdeps/0).

  def project do
    [
      app: :ecto_app,
      version: "0.1.0",
      elixir: "~> 1.14",
      start_permanent: Mix.env() == :prod,
      deps: deps(),
      aliases: aliases()
    ]
  end

  def application do
    [mod: {EctoApp.Application, []}, extra_applications: [:logger]]
  end

  defp aliases do
    ["ecto.dump": "trellis.dump"]
  end

  defp deps do
    mirrored = ~w(ecto_sql ecto postgrex db_connection decimal telemetry jason)a

    [{:trellis_pg, path: "../.."}] ++
      for(name <- mirrored, do: {name, path: Path.join(hexdeps(), "#{name}"), override: true})
  end

  # $TRELLIS_HEXDEPS, else shared/hexdeps beside the repository, else the
  # machines' usual place.
  defp hexdeps do
    candidates = [
      System.get_env("TRELLIS_HEXDEPS"),
      Path.expand("../../../../shared/hexdeps", __DIR__),
      "/work/shared/hexdeps"
    ]

    Enum.find(candidates, &(&1 && File.dir?(Path.join(&1, "ecto_sql")))) ||
      Mix.raise("no Hex mirror found: set TRELLIS_HEXDEPS to a directory holding ecto_sql, ...")
  end
end
