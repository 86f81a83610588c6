defmodule Trellis.PortBinary.Target do
  @moduledoc false

  # The release target a host runs, named as the release names its binaries
  # (`trellis-port-<version>-<target>`). Each Linux binary is fully static, so
  # one file serves glibc and musl hosts of its CPU.

  @targets ["x86_64-linux", "aarch64-linux"]

  @doc "The targets releases build a binary for."
  @spec known() :: [String.t()]
  def known, do: @targets

  @doc """
  The host's target: `$TRELLIS_PG_TARGET` when set, else derived from the
  VM's system architecture (e.g. `x86_64-pc-linux-gnu`, `aarch64-alpine-linux-musl`).
  """
  @spec host() :: String.t()
  def host do
    System.get_env("TRELLIS_PG_TARGET") ||
      from_architecture(to_string(:erlang.system_info(:system_architecture)))
  end

  @doc "The target for an architecture triple such as `x86_64-pc-linux-gnu`."
  @spec from_architecture(String.t()) :: String.t()
  def from_architecture(triple) do
    [cpu | rest] = String.split(triple, "-")
    os = if Enum.any?(rest, &String.starts_with?(&1, "linux")), do: "linux", else: os_of(rest)
    "#{normalize_cpu(cpu)}-#{os}"
  end

  defp normalize_cpu(cpu) when cpu in ["amd64", "x86_64"], do: "x86_64"
  defp normalize_cpu(cpu) when cpu in ["arm64", "aarch64"], do: "aarch64"
  defp normalize_cpu(cpu), do: cpu

  defp os_of(parts) do
    cond do
      Enum.any?(parts, &String.starts_with?(&1, "darwin")) -> "darwin"
      Enum.any?(parts, &String.contains?(&1, "freebsd")) -> "freebsd"
      true -> Enum.join(parts, "-")
    end
  end

  @doc "The release file name of the binary for `target`."
  @spec file_name(String.t(), String.t()) :: String.t()
  def file_name(version, target), do: "trellis-port-#{version}-#{target}"
end
