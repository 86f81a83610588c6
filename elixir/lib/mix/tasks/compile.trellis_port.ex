defmodule Mix.Tasks.Compile.TrellisPort do
  use Mix.Task.Compiler

  @shortdoc "Puts the trellis-port engine binary in place"

  @moduledoc """
  The Mix compiler of `trellis_pg`: picks the engine binary, `trellis-port`,
  when the package compiles. First match wins:

    1. An explicit binary, `TRELLIS_PORT_PATH` or `config :trellis_pg,
       port_path: "..."`: used as given, only checked to run. Nothing is
       installed.
    2. A source build, with `TRELLIS_PG_BUILD=1` or `config :trellis_pg,
       force_build: true`: CMake builds the C++ tree the package carries
       (`native/`); an error names what is missing (cmake, a C++20 compiler,
       a library's headers).
    3. In this repository (`:dev` and `:test`), always a source build of the
       repository's tree into `../build`, so `mix test` works after a fresh
       clone with no separate CMake step.
    4. The binary for the host's target shipped in the package (`bin/`).
    5. The binary for the host's target downloaded from the release's base
       URL: `TRELLIS_PG_BASE_URL` or `config :trellis_pg, base_url: "..."`
       (a mirror; `http://` is accepted, since the checksum vouches for the
       bytes). HTTPS verifies the server against the system's CA store, or
       against `TRELLIS_PG_CACERTFILE` / `config :trellis_pg, cacertfile:`.

  A shipped or downloaded binary is checked against the SHA-256 recorded in
  the package's `checksum-trellis_pg.exs` before it is installed as
  `priv/trellis-port`; a mismatch fails the compile naming the file and both
  digests. A host whose target has no released binary fails naming the
  target and the source-build switch.

  The choice is made once, when the package compiles, and recorded beside
  the binary it installed (`trellis_port.installed` in the package's build
  directory: the package version, the choice, the binary's SHA-256). Mix
  runs this compiler again on later compiles (a path dependency's on every
  host compile, any dependency's after the host's config changes); as long
  as the installed binary is the one recorded for this version, it is kept,
  whatever the settings say now, and a note says when they would choose
  otherwise. After changing a setting, run
  `mix deps.compile trellis_pg --force`: Mix then empties the package's
  build directory, record included, and the choice is made again.
  """

  alias Trellis.PortBinary.{Checksum, Download, SourceBuild, Target}

  @default_base_url "https://github.com/trellis-pg/trellis/releases/download"

  @impl Mix.Task.Compiler
  def run(args) do
    {opts, _, _} = OptionParser.parse(args, switches: [force: :boolean])
    package_dir = Path.dirname(Mix.Project.project_file())

    case choose(package_dir) do
      {:explicit, path, source} ->
        check_explicit(path, source)

      :repository ->
        build_repository(package_dir)

      choice ->
        # Only `mix compile --force` inside the package passes it; Mix's
        # `deps.compile --force` empties the build directory instead.
        forced? = opts[:force] == true

        case installed_choice() do
          {:ok, kept} when not forced? -> keep(kept, choice)
          _none_or_forced -> install_choice(choice, package_dir)
        end
    end
  end

  defp install_choice(:force_build, package_dir), do: build_from_source(package_dir)
  defp install_choice(:release, package_dir), do: install_release(package_dir)

  defp keep(choice, choice), do: {:noop, []}

  defp keep(kept, _other) do
    Mix.shell().info(
      "trellis_pg: keeping the #{describe(kept)} installed when the package compiled; " <>
        "run `mix deps.compile trellis_pg --force` to apply the changed setting"
    )

    {:noop, []}
  end

  defp describe(:force_build), do: "trellis-port built from source"
  defp describe(:release), do: "released trellis-port"

  defp choose(package_dir) do
    cond do
      path = System.get_env("TRELLIS_PORT_PATH") -> {:explicit, path, "TRELLIS_PORT_PATH"}
      path = config(:port_path) -> {:explicit, path, "config :trellis_pg, :port_path"}
      truthy?(System.get_env("TRELLIS_PG_BUILD")) or config(:force_build) == true -> :force_build
      repository?(package_dir) -> :repository
      true -> :release
    end
  end

  defp config(key), do: Application.get_env(:trellis_pg, key)
  defp truthy?(value), do: value in ["1", "true", "yes"]

  # The repository's own checkout: the C++ tree is one level up, not in native/.
  defp repository?(package_dir) do
    Mix.env() in [:dev, :test] and
      File.regular?(Path.join(package_dir, "../engine/CMakeLists.txt")) and
      not File.dir?(Path.join(package_dir, "native"))
  end

  defp check_explicit(path, source) do
    case System.cmd(path, ["--version"], stderr_to_stdout: true) do
      {"trellis-port " <> _, 0} ->
        {:noop, []}

      {output, status} ->
        Mix.raise(
          "#{source} names #{path}, which does not run as trellis-port " <>
            "(exit #{status}): #{String.trim(output)}"
        )
    end
  rescue
    error in ErlangError ->
      Mix.raise("#{source} names #{path}, which cannot be run: #{inspect(error.original)}")
  end

  defp build_repository(package_dir) do
    root = Path.expand("..", package_dir)
    build_dir = Path.join(root, "build")
    args = ["-DCMAKE_BUILD_TYPE=RelWithDebInfo"]

    case SourceBuild.build(root, build_dir, ["trellis-port", "trellis-testkit"], args) do
      {:ok, _} -> {:ok, []}
      {:error, message} -> Mix.raise(message)
    end
  end

  defp build_from_source(package_dir) do
    source = Path.join(package_dir, "native")

    unless File.regular?(Path.join(source, "CMakeLists.txt")) do
      Mix.raise(
        "a source build was asked for (TRELLIS_PG_BUILD=1 or config :trellis_pg, " <>
          "force_build: true), but the package has no C++ tree at #{source}"
      )
    end

    Mix.shell().info("trellis_pg: building trellis-port from source with CMake (a few minutes)")
    build_dir = Path.join(Mix.Project.app_path(), "cmake")
    # A unity build: one build, never edited, so batches cost nothing and
    # the compile takes about a quarter of the time (RELEASING.md "Build time").
    args = [
      "-DCMAKE_BUILD_TYPE=Release",
      "-DTRELLIS_TESTS=OFF",
      "-DTRELLIS_BENCH=OFF",
      "-DTRELLIS_UNITY_BUILD=ON"
    ]

    case SourceBuild.build(source, build_dir, ["trellis-port"], args) do
      {:ok, _} ->
        install(File.read!(Path.join(build_dir, "port/trellis-port")), :force_build)

      {:error, message} ->
        Mix.raise(message)
    end
  end

  defp install_release(package_dir) do
    version = Mix.Project.config()[:version]
    target = Target.host()
    name = Target.file_name(version, target)
    digests = read_checksums(package_dir)

    unless Map.has_key?(digests, name) do
      Mix.raise(
        "no trellis-port binary is released for this host's target, #{target} " <>
          "(released: #{Enum.join(Target.known(), ", ")}); build it from source with " <>
          "TRELLIS_PG_BUILD=1 mix deps.compile trellis_pg --force, or " <>
          "config :trellis_pg, force_build: true"
      )
    end

    {bytes, origin} = fetch_binary(package_dir, version, name)

    case Checksum.verify(digests, name, bytes, origin) do
      :ok -> install(bytes, :release)
      {:error, message} -> Mix.raise(message)
    end
  end

  defp read_checksums(package_dir) do
    case Checksum.read(Path.join(package_dir, Checksum.file_name())) do
      {:ok, digests} -> digests
      {:error, message} -> Mix.raise("cannot verify the trellis-port binary: " <> message)
    end
  end

  defp fetch_binary(package_dir, version, name) do
    shipped = Path.join([package_dir, "bin", name])

    if File.regular?(shipped) do
      {File.read!(shipped), shipped}
    else
      base = System.get_env("TRELLIS_PG_BASE_URL") || config(:base_url) || default_base(version)
      url = String.trim_trailing(base, "/") <> "/" <> name
      cacertfile = System.get_env("TRELLIS_PG_CACERTFILE") || config(:cacertfile)
      Mix.shell().info("trellis_pg: downloading #{url}")

      case Download.fetch(url, cacertfile) do
        {:ok, bytes} -> {bytes, url}
        {:error, message} -> Mix.raise(message <> "; set TRELLIS_PG_BASE_URL for a mirror")
      end
    end
  end

  defp default_base(version), do: "#{@default_base_url}/v#{version}"

  # The record of the choice an earlier compile made: "<version>\n<choice>\n<sha256>".
  defp record_path, do: Path.join(Mix.Project.app_path(), "trellis_port.installed")

  defp installed_path, do: Path.join([Mix.Project.app_path(), "priv", "trellis-port"])

  # {:ok, choice} when the installed binary is the one an earlier compile of
  # this version recorded; :none otherwise (nothing installed, another
  # version's record, a binary changed since).
  defp installed_choice do
    version = Mix.Project.config()[:version]

    with {:ok, record} <- File.read(record_path()),
         [^version, choice, digest] <- String.split(record, "\n", trim: true),
         {:ok, bytes} <- File.read(installed_path()),
         ^digest <- Checksum.digest(bytes),
         choice when choice in ["force_build", "release"] <- choice do
      {:ok, String.to_existing_atom(choice)}
    else
      _ -> :none
    end
  end

  # Written beside the destination and renamed over it, so a running port
  # keeps its file and a failed write leaves no half binary behind; then
  # the record of the choice.
  defp install(bytes, choice) do
    path = installed_path()
    File.mkdir_p!(Path.dirname(path))
    partial = path <> ".partial"
    File.write!(partial, bytes)
    File.chmod!(partial, 0o755)
    File.rename!(partial, path)
    version = Mix.Project.config()[:version]
    File.write!(record_path(), "#{version}\n#{choice}\n#{Checksum.digest(bytes)}\n")
    {:ok, []}
  end
end
