defmodule Trellis.PortBinary do
  @moduledoc false

  # Where the `trellis-port` executable is, first match wins:
  #
  #   1. $TRELLIS_PORT_PATH
  #   2. config :trellis_pg, port_path: "..."
  #   3. priv/trellis-port in the application's directory (a packaged build)
  #   4. ../build/port/trellis-port next to this mix project (the repository's
  #      default CMake build directory)
  #
  # An explicit path (1 or 2) that does not exist is an error of its own: it
  # is never silently replaced by a later candidate.

  alias Trellis.Error

  @build_command "cmake -S . -B build -G Ninja && ninja -C build trellis-port"
  @repo_build Path.expand("../../../build/port/trellis-port", __DIR__)

  @doc "The command that builds the binary, from the repository root."
  @spec build_command() :: String.t()
  def build_command, do: @build_command

  @doc "The path of an executable trellis-port, or an error saying how to get one."
  @spec path() :: {:ok, Path.t()} | {:error, Error.t()}
  def path do
    cond do
      path = System.get_env("TRELLIS_PORT_PATH") ->
        explicit(path, "$TRELLIS_PORT_PATH")

      path = Application.get_env(:trellis_pg, :port_path) ->
        explicit(path, "config :trellis_pg, :port_path")

      true ->
        search([priv_path(), @repo_build])
    end
  end

  defp explicit(path, source) do
    if executable?(path),
      do: {:ok, path},
      else:
        {:error, Error.new(:internal, "#{source} names #{path}, which is not an executable file")}
  end

  defp search(candidates) do
    case Enum.find(candidates, &executable?/1) do
      nil ->
        {:error,
         Error.new(
           :internal,
           "trellis-port not found (looked in #{Enum.join(candidates, ", ")}); " <>
             "build it from the repository root with `#{@build_command}`, " <>
             "or set TRELLIS_PORT_PATH"
         )}

      path ->
        {:ok, path}
    end
  end

  defp priv_path do
    case :code.priv_dir(:trellis_pg) do
      {:error, _} -> Path.expand("../../priv/trellis-port", __DIR__)
      dir -> Path.join(to_string(dir), "trellis-port")
    end
  end

  defp executable?(path) do
    case File.stat(path) do
      {:ok, %File.Stat{type: :regular, mode: mode}} -> Bitwise.band(mode, 0o111) != 0
      _ -> false
    end
  end
end
