defmodule Trellis.Test.Database do
  @moduledoc false

  # A fresh database on the suite's cluster per test, so tests never see each
  # other's catalogs or tables and can run concurrently.

  alias Trellis.Test.SimplePG

  @doc """
  Creates a database and returns its URL. Options: `:wal_level` -
  `:logical` creates it on a cluster with `wal_level = logical`
  (`Trellis.TestCluster.logical_url/0`); default: the suite's cluster.
  """
  @spec create!(String.t(), keyword()) :: String.t()
  def create!(prefix \\ "t", opts \\ []) do
    base = cluster_url(opts)
    name = "#{prefix}_#{System.unique_integer([:positive])}"
    admin = SimplePG.connect!(base)
    SimplePG.query!(admin, "CREATE DATABASE #{name}")
    SimplePG.close(admin)
    url_for(base, name)
  end

  @doc """
  Creates a database and opens a plain session on it, closed when the test
  exits (call it from the test process or its setup). Returns `%{url:, pg:}`.
  Takes the options of `create!/2`.
  """
  @spec open!(String.t(), keyword()) :: %{url: String.t(), pg: SimplePG.t()}
  def open!(prefix \\ "t", opts \\ []) do
    url = create!(prefix, opts)
    pg = SimplePG.connect!(url)

    # Registered before the test's handles, so it runs after they stopped.
    ExUnit.Callbacks.on_exit(fn ->
      drop_idle_slots(pg)
      SimplePG.close(pg)
    end)

    %{url: url, pg: pg}
  end

  # A test database left with a replication slot (capture by logical
  # decoding) keeps it, and the WAL it holds, for the rest of the suite:
  # the cluster has room for 64 (trellis-testkit), about twice the logical
  # leg's tests. A slot still in use is left alone.
  defp drop_idle_slots(pg) do
    SimplePG.query!(
      pg,
      "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots " <>
        "WHERE database = current_database() AND NOT active"
    )
  rescue
    _ -> :ok
  end

  @doc """
  Creates a login role (not a superuser, so connection limits and privileges
  apply to it) and a database it owns. Returns `%{role:, database:, url:,
  owner_url:}`: `url` connects as the cluster's superuser, `owner_url` as the
  new role.
  """
  @spec create_with_owner!(String.t()) :: %{
          role: String.t(),
          database: String.t(),
          url: String.t(),
          owner_url: String.t()
        }
  def create_with_owner!(prefix) do
    role = "#{prefix}_role_#{System.unique_integer([:positive])}"
    url = create!(prefix)
    database = url |> URI.parse() |> Map.fetch!(:path) |> String.trim_leading("/")
    admin = SimplePG.connect!(Trellis.TestCluster.url())
    SimplePG.query!(admin, "CREATE ROLE #{role} LOGIN")
    SimplePG.query!(admin, "ALTER DATABASE #{database} OWNER TO #{role}")
    SimplePG.close(admin)
    owner_url = URI.to_string(%{URI.parse(url) | userinfo: role})
    %{role: role, database: database, url: url, owner_url: owner_url}
  end

  @doc """
  A database owned by a new role, as `create_with_owner!/1` makes it, with a
  session as that role (`:owner`, for the app's tables) and one as the
  cluster's superuser (`:admin`, for what only it may do: revoke, disable
  capture); both are closed when the test exits.
  """
  @spec open_owned!(String.t()) :: %{
          role: String.t(),
          database: String.t(),
          url: String.t(),
          owner_url: String.t(),
          owner: SimplePG.t(),
          admin: SimplePG.t()
        }
  def open_owned!(prefix) do
    db = create_with_owner!(prefix)
    owner = SimplePG.connect!(db.owner_url)
    admin = SimplePG.connect!(db.url)

    ExUnit.Callbacks.on_exit(fn ->
      SimplePG.close(owner)
      SimplePG.close(admin)
    end)

    Map.merge(db, %{owner: owner, admin: admin})
  end

  defp cluster_url(opts) do
    case Keyword.validate!(opts, wal_level: :replica)[:wal_level] do
      :replica ->
        Trellis.TestCluster.url()

      :logical ->
        Trellis.TestCluster.logical_url()

      other ->
        raise ArgumentError, "wal_level: expected :replica or :logical, got #{inspect(other)}"
    end
  end

  @doc "The URL of database `name` on the cluster of `base`."
  @spec url_for(String.t(), String.t()) :: String.t()
  def url_for(base, name) do
    uri = URI.parse(base)
    URI.to_string(%{uri | path: "/" <> name})
  end
end
