defmodule Trellis.StructureDump do
  @moduledoc """
  Appends an instance's definitions to a structure file, so `mix ecto.load`
  rebuilds its transforms.

  A schema-only dump (`mix ecto.dump`, `pg_dump --schema-only`) carries
  Trellis's catalog tables, the target tables and the capture triggers, but
  no rows: a database loaded from it has targets and no transforms.
  `append/2` adds the SQL of `Trellis.dump_definitions_sql/1` at the end of
  the file, the way Ecto adds its `schema_migrations` rows. The first drain
  worker on a database loaded from the file finds definitions that are not
  built and builds them. Only definitions travel: the ledger, backfill
  progress and quarantine are runtime state, and a paused transform loads
  `:waiting_to_backfill`.

  `mix trellis.dump` runs `mix ecto.dump` and appends for every repo with a
  `:trellis` configuration, and dumps again when a define or drop commits
  during the dump. Use `append/2` for a file someone else dumped: it reads
  the definitions once, after the dump, so it cannot see a define that
  raced that dump.

  It also rewrites a `CREATE SCHEMA public;` line (pg_dump writes one when
  it dumps `public` by name) to `CREATE SCHEMA IF NOT EXISTS public;`: a
  database that `mix ecto.create` made already has `public`, and
  `mix ecto.load` stops at the first error.
  """

  alias Trellis.{Error, RepoHandle}

  @create_public "CREATE SCHEMA IF NOT EXISTS public;"

  @doc """
  Appends the definitions of the instance behind `source` to the structure
  file at `path`.

  `source` is a handle, the name of a supervised one, or an Ecto repo with a
  `:trellis` configuration (a handle is then connected for the call and shut
  down after it). The file must exist.

  ## Example

      :ok = Trellis.StructureDump.append(MyApp.Repo, "priv/repo/structure.sql")
  """
  @spec append(Trellis.handle() | module, Path.t()) :: :ok | {:error, Error.t()}
  def append(source, path) do
    if File.regular?(path) do
      with {:ok, sql} <- read(source), do: write(path, sql)
    else
      {:error, Error.new(:validation, "no structure file at #{path}: dump the schema first")}
    end
  end

  @doc """
  Like `append/2`, but returns `:ok` or raises `Trellis.Error`.

  ## Example

      :ok = Trellis.StructureDump.append!(trellis, "priv/repo/structure.sql")
  """
  @spec append!(Trellis.handle() | module, Path.t()) :: :ok
  def append!(source, path) do
    case append(source, path) do
      :ok -> :ok
      {:error, error} -> raise error
    end
  end

  defp read(source) do
    if repo?(source),
      do: RepoHandle.with_handle(source, &Trellis.dump_definitions_sql/1),
      else: Trellis.dump_definitions_sql(source)
  end

  @doc false
  # Whether `source` is an Ecto repo rather than a handle's name.
  @spec repo?(term) :: boolean
  def repo?(source) do
    is_atom(source) and Code.ensure_loaded?(source) and
      function_exported?(source, :__adapter__, 0)
  end

  @doc false
  # Appends `sql` (definitions as dump_definitions_sql/1 renders them) to the
  # file at `path`, making its CREATE SCHEMA public loadable on the way.
  @spec write(Path.t(), String.t()) :: :ok | {:error, Error.t()}
  def write(path, sql) do
    with {:ok, dumped} <- File.read(path),
         loadable = Regex.replace(~r/^CREATE SCHEMA public;$/m, dumped, @create_public),
         :ok <- File.write(path, [loadable, sql]) do
      :ok
    else
      {:error, reason} ->
        {:error, Error.new(:validation, "cannot write #{path}: #{:file.format_error(reason)}")}
    end
  end
end
