defmodule Trellis.RepoHandle do
  @moduledoc false

  # A short-lived handle from an Ecto repo's `:trellis` configuration, for
  # Trellis.Migration and mix trellis.dump. Neither runs inside the host
  # application (Ecto migrates and dumps without starting it), so each opens
  # a handle of its own and shuts it down when done. Ecto is reached only
  # through the repo module the caller passes in.

  @doc """
  The connect options in `repo`'s `:trellis` configuration, made safe for a
  short-lived handle: nothing runs in the background (`staging: false`,
  `drain_threads: 0`) and `:name` is dropped, whatever the application's own
  handle uses. Raises `ArgumentError` when the repo has none.
  """
  @spec connect_options!(module) :: keyword
  def connect_options!(repo) do
    case configured(repo) do
      {:ok, opts} ->
        opts
        |> Keyword.drop([:name, :staging, :drain_threads])
        |> Keyword.merge(staging: false, drain_threads: 0)

      :error ->
        raise ArgumentError,
              "#{inspect(repo)} has no :trellis configuration; add it where the repo is " <>
                "configured, e.g. `config :my_app, #{inspect(repo)}, trellis: [url: database_url]`"
    end
  end

  @doc "Whether `repo` has a `:trellis` keyword list in its configuration."
  @spec configured?(module) :: boolean
  def configured?(repo), do: configured(repo) != :error

  defp configured(repo) do
    case Keyword.get(repo.config(), :trellis) do
      [_ | _] = opts -> if Keyword.keyword?(opts), do: {:ok, opts}, else: :error
      _ -> :error
    end
  end

  @doc "The catalog schema `repo`'s handles use (default: `\"trellis\"`)."
  @spec schema(module) :: String.t()
  def schema(repo), do: Keyword.get(connect_options!(repo), :schema) || "trellis"

  @doc """
  Connects a handle from `repo`'s configuration, runs `fun` with it and shuts
  it down, also when `fun` raises. Starts `:trellis_pg` first, since Ecto's
  tasks do not start the host application.
  """
  @spec with_handle(module, (Trellis.t() -> result)) :: result when result: term
  def with_handle(repo, fun) do
    opts = connect_options!(repo)
    {:ok, _} = Application.ensure_all_started(:trellis_pg)
    handle = Trellis.connect!(opts)

    try do
      fun.(handle)
    after
      Trellis.shutdown(handle)
    end
  end
end
