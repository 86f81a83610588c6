defmodule Mix.Tasks.Trellis.Status do
  @shortdoc "Prints every transform's state and exits non-zero when one needs attention"

  @default_max_lag_s 60

  @moduledoc """
  Prints one table of every transform of an instance, and exits non-zero
  when any needs attention, so a deploy script can gate on it.

      $ mix trellis.status --url postgres://app@db/app
      $ mix trellis.status -r MyApp.Repo --max-lag 30
      $ mix trellis.status --url "$DATABASE_URL" --schema trellis --no-color

      TRANSFORM      STATUS             LAG   BACKLOG             HELD  QUARANTINED  DRAIN FAILURE
      widget_prices  live               0s    0 pages / 0 keys    0     -            -
      order_totals   paused (operator)  250s  3 pages / 812 keys  0     -            -

      order_totals: paused (operator)
      order_totals: lag 250s over the limit of 60s

  Columns, per transform (each as `Trellis.status/2` reports it):

    * `STATUS` - its state, with the kind of pause when paused
    * `LAG` - time, by the database server's clock, since the oldest write
      still waiting in its ledger was staged (a write is staged about 10 ms
      after its commit while the staging worker keeps up); `0s` when nothing
      waits. The same number as the `trellis_transform_lag_seconds` gauge
    * `BACKLOG` - ledger pages and keys waiting to be drained, and capture
      rows not staged yet when there are any
    * `HELD` - keys it holds (`Trellis.release_key/4`)
    * `QUARANTINED` - its columns in quarantine (`Trellis.quarantined/1`)
    * `DRAIN FAILURE` - the open drain failure: unit, SQLSTATE, attempts and
      PostgreSQL's message

  ## Exit status

    * `0` - every transform is fine
    * `1` - a transform is paused, a column of one is paused (in quarantine
      or by an operator), a drain failure is open, capture of a table one
      reads is disrupted, one holds keys, or one lags more than `--max-lag`
      seconds; the lines under the table say which and why. The status could
      not be read (no connection, no Trellis catalog in that schema, an
      unknown repo) also exits 1, with the reason

  A transform still building (`waiting_to_backfill`, `backfilling`,
  `catching_up`) is not a problem in itself, only when it lags past the
  limit.

  ## Options

    * `--url URL` - the database, as `Trellis.connect/1` takes it (TLS
      options in the URL); with `--schema SCHEMA` for the catalog schema
      (default: `trellis`)
    * `-r`, `--repo REPO` - an Ecto repo with a `:trellis` configuration
      (`config :my_app, MyApp.Repo, trellis: [url: ...]`, as for
      `Trellis.Migration`); may be given more than once. Without `--url` or
      `--repo`: every repo of the app's `:ecto_repos` that has one
    * `--max-lag SECONDS` - the lag past which a transform is a problem
      (default: #{@default_max_lag_s}); a number, fractions allowed
    * `--no-color` - no colours; they are on only when the standard output
      is a terminal (`IO.ANSI.enabled?/0`), and `--color` forces them on

  The task connects a handle that runs nothing in the background and shuts
  it down when done; it reads each transform with `Trellis.status/2`, and
  the lags with one more read on a connection of its own.
  """

  use Mix.Task

  alias Trellis.{Error, RepoHandle, StatusTable}

  @switches [
    url: :string,
    schema: :string,
    repo: [:string, :keep],
    max_lag: :string,
    color: :boolean,
    no_compile: :boolean,
    no_deps_check: :boolean
  ]
  @aliases [r: :repo]

  @impl Mix.Task
  def run(args) do
    {opts, rest} = OptionParser.parse!(args, strict: @switches, aliases: @aliases)

    if rest != [],
      do: Mix.raise("mix trellis.status takes no arguments, got: #{Enum.join(rest, " ")}")

    max_lag_s = max_lag!(opts[:max_lag])
    colors? = Keyword.get(opts, :color, IO.ANSI.enabled?())

    if opts[:url] && opts[:repo],
      do: Mix.raise("mix trellis.status takes --url or --repo, not both")

    problems =
      for {label, with_handle} <- targets(opts, args) do
        statuses = with_handle.(&read_statuses!(&1, label))
        report(label, statuses, max_lag_s, colors?)
      end
      |> List.flatten()

    if problems != [], do: exit({:shutdown, 1})
    :ok
  end

  defp max_lag!(nil), do: @default_max_lag_s

  defp max_lag!(text) do
    case Float.parse(text) do
      {seconds, ""} when seconds >= 0 ->
        seconds

      _other ->
        Mix.raise("--max-lag takes a number of seconds (like 60 or 2.5), got: #{inspect(text)}")
    end
  end

  # Each instance to report on: a label and a function running its argument
  # with a handle.
  defp targets(opts, args) do
    Mix.Task.run("app.config", args)

    cond do
      url = opts[:url] ->
        schema = opts[:schema] || "trellis"
        [{"#{without_password(url)} (schema #{schema})", &with_url(url, schema, &1)}]

      true ->
        case repos(opts) do
          [] ->
            Mix.raise(
              "No repo with a :trellis configuration: pass --url URL, or -r MyApp.Repo for a " <>
                "repo configured with `trellis: [url: ...]`"
            )

          repos ->
            for repo <- repos, do: {inspect(repo), &RepoHandle.with_handle(repo, &1)}
        end
    end
  end

  defp repos(opts) do
    case Keyword.get_values(opts, :repo) do
      [] ->
        app = Keyword.fetch!(Mix.Project.config(), :app)
        Application.get_env(app, :ecto_repos, []) |> Enum.filter(&RepoHandle.configured?/1)

      names ->
        for name <- names do
          repo = Module.concat([name])

          unless Code.ensure_loaded?(repo) and function_exported?(repo, :config, 0),
            do: Mix.raise("#{name} is not a repo module of this project")

          repo
        end
    end
  end

  # The URL as a label: without the password it may carry.
  defp without_password(url) do
    case URI.parse(url) do
      %URI{userinfo: info} = uri when is_binary(info) ->
        user = info |> String.split(":", parts: 2) |> hd()
        URI.to_string(%URI{uri | userinfo: user})

      _other ->
        url
    end
  end

  defp with_url(url, schema, fun) do
    {:ok, _} = Application.ensure_all_started(:trellis_pg)

    case Trellis.connect(url: url, schema: schema) do
      {:ok, handle} ->
        try do
          fun.(handle)
        after
          Trellis.shutdown(handle)
        end

      {:error, error} ->
        Mix.raise("Could not connect: " <> Exception.message(error))
    end
  end

  # Each transform's status and lag: the transform reports give the lag (and
  # the list), status/2 the details a row shows.
  defp read_statuses!(handle, label) do
    case Trellis.Call.call(handle, "transform_reports", %{}) do
      {:ok, reports} ->
        for %{"name" => name, "lag_ms" => lag_ms} <- reports,
            status = read_status!(handle, name),
            do: {status, lag_ms}

      {:error, %Error{code: :not_migrated}} ->
        Mix.raise(
          "#{label} has no Trellis catalog: run Trellis.migrate/1 (or the migrations) " <>
            "first, or pass the right --schema"
        )

      {:error, error} ->
        Mix.raise(Exception.message(error))
    end
  end

  # nil for a transform dropped since the list was read.
  defp read_status!(handle, name) do
    case Trellis.status(handle, name) do
      {:ok, status} -> status
      {:error, %Error{code: :not_found}} -> nil
      {:error, error} -> Mix.raise(Exception.message(error))
    end
  end

  defp report(label, rows, max_lag_s, colors?) do
    problems = StatusTable.problems(rows, max_lag_s)
    shell = Mix.shell()
    shell.info(label)

    if rows == [],
      do: shell.info("no transforms"),
      else: shell.info(StatusTable.render(rows, max_lag_s, colors?))

    for {transform, reason} <- problems do
      line = "#{transform}: #{reason}"
      shell.info(if colors?, do: IO.ANSI.red() <> line <> IO.ANSI.reset(), else: line)
    end

    problems
  end
end
