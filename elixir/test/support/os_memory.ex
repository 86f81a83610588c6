defmodule Trellis.Test.OsMemory do
  @moduledoc false

  # A process's memory as Linux reports it in /proc/<pid>/status, for the
  # memory regression tests and bench/runtime/statement_memory.exs.

  @doc "The process's resident set now, in kB (VmRSS)."
  @spec rss_kb(non_neg_integer) :: non_neg_integer
  def rss_kb(os_pid), do: field_kb(os_pid, "VmRSS")

  @doc "The process's peak resident set since start or `reset_peak/1`, in kB (VmHWM)."
  @spec peak_kb(non_neg_integer) :: non_neg_integer
  def peak_kb(os_pid), do: field_kb(os_pid, "VmHWM")

  @doc "Resets the kernel's peak resident set of the process to its resident set now."
  @spec reset_peak(non_neg_integer) :: :ok
  def reset_peak(os_pid), do: File.write!("/proc/#{os_pid}/clear_refs", "5")

  defp field_kb(os_pid, field) do
    prefix = field <> ":"

    "/proc/#{os_pid}/status"
    |> File.read!()
    |> String.split("\n")
    |> Enum.find_value(fn line ->
      case String.split(line) do
        [^prefix, kb, "kB"] -> String.to_integer(kb)
        _ -> nil
      end
    end)
  end
end
