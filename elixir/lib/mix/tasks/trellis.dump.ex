defmodule Mix.Tasks.Trellis.Dump do
  @shortdoc "Runs mix ecto.dump and appends the Trellis definitions"

  @moduledoc """
  Runs `mix ecto.dump` and appends each repo's Trellis definitions to the
  structure file, so `mix ecto.load` gives a database whose transforms are
  rebuilt (see `Trellis.StructureDump`).

      $ mix trellis.dump
      $ mix trellis.dump -r MyApp.Repo -d priv/repo/structure.sql --prefix public --prefix trellis

  Make it what `mix ecto.dump` runs, with an alias in `mix.exs`:

      defp aliases do
        ["ecto.dump": "trellis.dump"]
      end

  The arguments (`-r`, `-d`, `--prefix`, `-q`, `--no-compile`,
  `--no-deps-check`) mean what they mean to `mix ecto.dump`, which gets
  them unchanged, one repo at a time. Repos without a `:trellis`
  configuration are dumped as `mix ecto.dump` dumps them.

  For a repo with one (`config :my_app, MyApp.Repo, trellis: [url: ...]`),
  the task connects a handle that runs nothing in the background and:

    1. refuses a dump that names its schemas (`--prefix`, else the repo's
       `:dump_prefixes`) without the Trellis schema or a target's schema,
       before dumping anything;
    2. reads the definitions, runs the dump, and reads them again; when a
       define, alter or drop committed in between, the file's tables and
       definitions may disagree, so it dumps again, up to three more times,
       and fails if they never hold still;
    3. appends the definitions read after the last dump, and rewrites
       pg_dump's `CREATE SCHEMA public;` to `CREATE SCHEMA IF NOT EXISTS
       public;`.

  A database whose Trellis catalog does not exist yet gets nothing appended,
  and the task says so.

  The check compares the definitions, so it cannot see a define and a drop
  of the same transform that both commit while one dump runs: the pair
  leaves the definitions as they were, and the file may then hold a target
  table (and capture trigger) with no definition. Dump when no migration or
  deploy is changing transforms, as for any schema dump.
  """

  use Mix.Task

  alias Trellis.{Error, RepoHandle, StructureDump}

  @switches [
    dump_path: :string,
    quiet: :boolean,
    repo: [:string, :keep],
    no_compile: :boolean,
    no_deps_check: :boolean,
    prefix: [:string, :keep]
  ]
  @aliases [d: :dump_path, q: :quiet, r: :repo]

  # A first dump and up to three more.
  @max_dumps 4

  @impl Mix.Task
  def run(args) do
    {opts, _} = OptionParser.parse!(args, strict: @switches, aliases: @aliases)
    Mix.Task.run("app.config", args)
    ecto_dump = Mix.Task.get!("ecto.dump")
    # ecto.dump's own argument list minus its repos: each run names one.
    shared_args = OptionParser.to_argv(Keyword.delete(opts, :repo), switches: @switches)

    for repo <- repos(opts) do
      dump = fn -> ecto_dump.run(shared_args ++ ["-r", inspect(repo)]) end

      if RepoHandle.configured?(repo),
        do: RepoHandle.with_handle(repo, &dump_with_definitions(&1, repo, opts, dump)),
        else: dump.()
    end

    :ok
  end

  defp repos(opts) do
    case Keyword.get_values(opts, :repo) do
      [] ->
        app = Keyword.fetch!(Mix.Project.config(), :app)
        Application.get_env(app, :ecto_repos, [])

      names ->
        Enum.map(names, &Module.concat([&1]))
    end
  end

  defp dump_with_definitions(handle, repo, opts, dump) do
    refuse_partial_prefixes!(handle, repo, opts)
    path = dump_path(repo, opts)

    case dump_until_stable(handle, repo, opts, dump, 1) do
      {:ok, sql} ->
        case StructureDump.write(path, sql) do
          :ok ->
            info(opts, "The Trellis definitions of #{inspect(repo)} were appended to #{path}")

          {:error, error} ->
            Mix.raise(Exception.message(error))
        end

      :no_catalog ->
        info(opts, "#{inspect(repo)} has no Trellis catalog yet: no definitions appended")
    end
  end

  defp dump_until_stable(handle, repo, opts, dump, attempt) do
    before = definitions_sql(handle)
    dump.()

    case definitions_sql(handle) do
      ^before ->
        before

      _changed when attempt < @max_dumps ->
        info(
          opts,
          "Trellis definitions of #{inspect(repo)} changed during the dump; " <>
            "dumping again (#{attempt + 1} of #{@max_dumps})"
        )

        dump_until_stable(handle, repo, opts, dump, attempt + 1)

      _changed ->
        Mix.raise(
          "The Trellis definitions of #{inspect(repo)} changed during each of " <>
            "#{@max_dumps} dumps, so the structure file's tables and definitions may " <>
            "disagree; run the dump again when no migration or deploy is defining transforms"
        )
    end
  end

  defp definitions_sql(handle) do
    case Trellis.dump_definitions_sql(handle) do
      {:ok, sql} -> {:ok, sql}
      {:error, %Error{code: :not_migrated}} -> :no_catalog
      {:error, error} -> Mix.raise(Exception.message(error))
    end
  end

  # A dump limited to some schemas must hold the catalog and every target, or
  # the definitions appended to it would not load.
  defp refuse_partial_prefixes!(handle, repo, opts) do
    case prefixes(repo, opts) do
      nil ->
        :ok

      prefixes ->
        needed = [RepoHandle.schema(repo) | target_schemas(handle)]

        case Enum.uniq(needed) -- prefixes do
          [] ->
            :ok

          missing ->
            Mix.raise(
              "The dump of #{inspect(repo)} names the schemas #{inspect(prefixes)}, which " <>
                "leave out #{inspect(missing)}: the Trellis catalog and every target " <>
                "table must be in it for the definitions to load. Add " <>
                Enum.map_join(missing, " ", &"--prefix #{&1}") <> "."
            )
        end
    end
  end

  defp prefixes(repo, opts) do
    case Keyword.get_values(opts, :prefix) do
      [] -> repo.config()[:dump_prefixes]
      prefixes -> prefixes
    end
  end

  defp target_schemas(handle) do
    case Trellis.definitions(handle) do
      {:ok, definitions} ->
        for %{target_table: table} <- definitions,
            [schema, _name] <- [String.split(table, ".", parts: 2)],
            do: schema

      {:error, %Error{code: :not_migrated}} ->
        []

      {:error, error} ->
        Mix.raise(Exception.message(error))
    end
  end

  # Where ecto.dump writes: -d, else the repo's :dump_path, else
  # structure.sql in the repo's priv directory.
  defp dump_path(repo, opts) do
    config = repo.config()

    opts[:dump_path] || config[:dump_path] ||
      Path.join(priv_dir(repo, config), "structure.sql")
  end

  defp priv_dir(repo, config) do
    priv = config[:priv] || "priv/#{repo |> Module.split() |> List.last() |> Macro.underscore()}"
    app = Keyword.fetch!(config, :otp_app)
    Path.join(Mix.Project.deps_paths()[app] || File.cwd!(), priv)
  end

  defp info(opts, message), do: unless(opts[:quiet], do: Mix.shell().info(message))
end
