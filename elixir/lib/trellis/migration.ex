# Compiled only when the host has ecto_sql (the package declares no
# dependency on it; see "Without Ecto" below for how that is decided).
ecto_sql? =
  Code.ensure_loaded?(Ecto.Migration) or
    File.dir?(Path.join(Mix.Project.deps_path(), "ecto_sql"))

if ecto_sql? do
  defmodule Trellis.Migration do
    @moduledoc """
    Defines, changes and inspects transforms from Ecto migrations.

        defmodule MyApp.Repo.Migrations.DefineWidgetPrices do
          use Ecto.Migration
          use Trellis.Migration

          @disable_ddl_transaction true

          def up do
            create table(:widgets) do
              add :price, :integer
            end

            define "TRANSFORM widget_prices FROM widgets SELECT price AS price"
          end

          def down do
            apply "PAUSE TRANSFORM widget_prices"
            apply "DROP TRANSFORM widget_prices"
            drop table(:widgets)
          end
        end

    `use Trellis.Migration` imports three helpers:

      * `define/1,2` - defines a transform (`Trellis.define!/2`) and returns
        `{:transform_defined, name}`
      * `apply/1` - runs any statement (`Trellis.apply!/2`: `PAUSE`, `RESUME`,
        `DROP`, `ALTER TRANSFORM`) and returns what it did
      * `status/1` - a transform's `Trellis.Status`

    They read like Ecto's own commands: add `import_deps: [:trellis_pg]` to
    the app's `.formatter.exs` and `mix format` keeps them free of
    parentheses. A failure raises `Trellis.Error`, which fails the migration.

    ## How a helper runs

    Ecto migrates without starting the application, so each helper connects a
    handle of its own from the repo's `:trellis` configuration, the options of
    `Trellis.connect/1`:

        # config/runtime.exs
        config :my_app, MyApp.Repo,
          url: database_url,
          trellis: [url: database_url]

    The handle runs nothing in the background (`staging` and `drain_threads`
    are forced off, so the application's own options can be reused), runs
    `Trellis.migrate/1` first, so the first migration that uses Trellis also
    creates its catalog, and is shut down when the helper returns. A target is
    built by the drain workers of the fleet (the application's, once it
    runs): a definition made here reads `:waiting_to_backfill` until one
    picks it up.

    Ecto queues a migration's own commands (`create table`, `execute`, ...)
    and runs them when `up/0` or `down/0` returns. A helper runs at once, so it
    first flushes the commands queued above it (`Ecto.Migration.flush/0`): a
    table created a line earlier exists when the transform is defined, and a
    `drop table` written after `DROP TRANSFORM` runs after it.

    ## Rules, checked before anything is applied

      * **`@disable_ddl_transaction true`.** Trellis commits its own work on
        its own connections and never joins the migration's transaction: a
        define inside a transaction that later rolls back would leave a
        transform behind whose migration never ran. A module that uses
        `Trellis.Migration` without it does not compile, so `mix ecto.migrate`
        stops before running any pending migration, with a message that says
        to add it. The helpers check it again as they run: called
        by their full name (`require Trellis.Migration`) from a module that
        does not `use` it, they raise `Trellis.Error` (`:validation`) when the
        migration's transaction is open, before they touch anything, and the
        transaction rolls back what the migration queued.
      * **`up/0` and `down/0`, not `change/0`.** Ecto rolls `change/0` back by
        running it again and reversing the commands it records; a helper is
        not a recorded command, so a rollback would define the transform a
        second time instead of dropping it. A module that defines `change/0`,
        or lacks `up/0` or `down/0`, does not compile.

    ## Running a migration twice: the optional guard

    A define is not idempotent, and the helpers do not make it so: Ecto's
    `schema_migrations` runs each migration once, and a second define of the
    same name fails with `:already_exists`. Where a migration may meet a
    transform it defined before (a database restored from a dump without its
    `schema_migrations` rows, migrations squashed into a new one), opt in:

        define "TRANSFORM widget_prices FROM widgets SELECT price AS price",
          if_not_defined: true

    With the guard, a transform of that name that already exists with the
    same definition is left as it is (`{:already_defined, name}` is
    returned and logged, `name` in the form `Trellis.define/2` returns and
    every statement takes back: see `Trellis.Applied`). One that exists with a different definition raises
    `Trellis.Error` (`:already_exists`) naming both statements: the guard
    never keeps a definition other than the one the migration states. Two
    statements are the same when they differ only in layout, comments, the
    case of keywords and plain identifiers, quotes around an identifier that
    needs none, an optional `AS`, and a final `;`. The comparison is against
    the transform as it is now, so a transform a later migration altered no
    longer matches its first define.

    ## Without Ecto

    `trellis_pg` declares no dependency on Ecto (a package that declares one,
    even as optional, makes every host's `mix deps.get` ask Hex for it), and
    this module is compiled only when the host has `ecto_sql`: when
    `trellis_pg` compiles, `Ecto.Migration` can be loaded, or the host's
    dependencies directory holds `ecto_sql` (Mix orders dependencies that do
    not depend on each other as it likes, so `trellis_pg` may compile before
    `ecto_sql` even in a host that has it). In a host without Ecto,
    `Trellis.Migration` does not exist. The choice is made when the package
    compiles: a host that adds `ecto_sql` later (or has it only as a `path:`
    dependency that compiled after `trellis_pg`) runs
    `mix deps.compile trellis_pg --force`. The helpers are macros, so the
    calls into `Ecto.Migration` are compiled in the host's migration modules,
    after every dependency, and run only when a migration does.
    """

    alias Trellis.Error
    alias Trellis.Migration.Statement
    alias Trellis.RepoHandle

    require Logger

    @doc false
    defmacro __using__(_opts) do
      quote do
        import Trellis.Migration, only: [define: 1, define: 2, apply: 1, status: 1]
        @before_compile Trellis.Migration
      end
    end

    @doc false
    defmacro __before_compile__(env) do
      module = env.module
      refuse = &raise(CompileError, file: env.file, line: env.line, description: &1)

      unless Module.get_attribute(module, :disable_ddl_transaction) == true do
        refuse.(
          "#{inspect(module)} uses Trellis.Migration, whose helpers commit on connections " <>
            "of their own and never join the migration's transaction: add " <>
            "`@disable_ddl_transaction true` to the module. Nothing was migrated."
        )
      end

      if Module.defines?(module, {:change, 0}) do
        refuse.(
          "#{inspect(module)} uses Trellis.Migration in change/0, which Ecto rolls back by " <>
            "running it again: define up/0 and down/0 instead (down/0 pauses and drops " <>
            "what up/0 defined). Nothing was migrated."
        )
      end

      for fun <- [:up, :down], not Module.defines?(module, {fun, 0}) do
        refuse.(
          "#{inspect(module)} uses Trellis.Migration and must define up/0 and down/0; " <>
            "#{fun}/0 is missing. Nothing was migrated."
        )
      end

      :ok
    end

    # The helpers are macros so that Ecto is reached from the host's migration
    # module, compiled after every dependency, never from this package: they
    # expand to a check, Ecto.Migration.flush/0 and a call of run/4.
    defp expand(helper, argument, opts) do
      quote do
        require Ecto.Migration
        Trellis.Migration.refuse_transaction!(Ecto.Migration.repo(), unquote(helper))
        Ecto.Migration.flush()

        Trellis.Migration.run(
          Ecto.Migration.repo(),
          unquote(helper),
          unquote(argument),
          unquote(opts)
        )
      end
    end

    @doc """
    Defines a transform from inside a migration and returns
    `{:transform_defined, name}`, or raises `Trellis.Error`.

    ## Options

      * `:if_not_defined` - leave a transform of that name that already
        exists with the same definition as it is, and return
        `{:already_defined, name}`; one with a different definition still
        raises (default: `false`). See "Running a migration twice" above.

    ## Example

        define "TRANSFORM widget_prices FROM widgets SELECT price AS price"
    """
    defmacro define(statement, opts \\ []), do: expand(:define, statement, opts)

    @doc """
    Runs any Trellis statement from inside a migration (`PAUSE`, `RESUME`,
    `DROP` or `ALTER TRANSFORM`, or a `TRANSFORM`) and returns what it did, as
    `Trellis.apply/2` does, or raises `Trellis.Error`.

    ## Example

        apply "PAUSE TRANSFORM widget_prices"
        apply "DROP TRANSFORM widget_prices"
    """
    defmacro apply(statement), do: expand(:apply, statement, [])

    @doc """
    A transform's `Trellis.Status`, read from inside a migration, or raises
    `Trellis.Error`.

    ## Example

        %Trellis.Status{status: :paused} = status("widget_prices")
    """
    defmacro status(transform), do: expand(:status, transform, [])

    @doc false
    # Raises before anything is applied when `repo` has a transaction open.
    @spec refuse_transaction!(module, atom) :: :ok
    def refuse_transaction!(repo, helper) do
      if repo.in_transaction?() do
        raise Error.new(
                :validation,
                "Trellis.Migration.#{helper} cannot run inside the migration's transaction: " <>
                  "add `@disable_ddl_transaction true` to the migration module"
              )
      end

      :ok
    end

    @doc false
    # What a helper does once Ecto's queued commands have run: a handle of its
    # own from `repo`'s configuration, migrate/1, the statement, shutdown.
    @spec run(module, :define | :apply | :status, String.t(), keyword) :: term
    def run(repo, helper, argument, opts) when is_binary(argument) do
      result =
        RepoHandle.with_handle(repo, fn handle ->
          Trellis.migrate!(handle)
          perform(helper, handle, argument, opts)
        end)

      Logger.info("trellis #{helper} #{argument} => #{inspect(result)}")
      result
    end

    defp perform(:define, handle, statement, opts) do
      opts = Keyword.validate!(opts, if_not_defined: false)
      existing = if opts[:if_not_defined], do: existing_definition(handle, statement)

      case existing do
        nil -> Trellis.define!(handle, statement)
        definition -> already_defined!(definition, statement)
      end
    end

    defp perform(:apply, handle, statement, []), do: Trellis.apply!(handle, statement)
    defp perform(:status, handle, transform, []), do: Trellis.status!(handle, transform)

    defp existing_definition(handle, statement) do
      case Statement.transform_name(statement) do
        {:ok, name} -> Enum.find(Trellis.definitions!(handle), &Statement.names?(&1, name))
        :error -> nil
      end
    end

    defp already_defined!(definition, statement) do
      if Statement.same?(definition.statement, statement) do
        {:already_defined, definition.name}
      else
        raise Error.new(
                :already_exists,
                "transform #{definition.name} already exists as `#{definition.statement}`, " <>
                  "not as this migration's `#{statement}`; drop it, or state the change in " <>
                  "an ALTER TRANSFORM"
              )
      end
    end
  end
end
