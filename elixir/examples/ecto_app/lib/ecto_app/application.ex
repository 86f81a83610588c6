defmodule EctoApp.Application do
  @moduledoc false
  use Application

  @impl true
  def start(_type, _args) do
    children = [
      EctoApp.Repo,
      {Trellis, Application.fetch_env!(:ecto_app, EctoApp.Trellis)}
    ]

    Supervisor.start_link(children, strategy: :one_for_one, name: EctoApp.Supervisor)
  end
end
