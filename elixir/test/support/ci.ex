defmodule Trellis.Test.CI do
  @moduledoc """
  Whether this run is CI's (`TRELLIS_CI=1`, which `.ci/run` exports), where
  no test may pass without running: a test that cannot check what it is
  about (a tool or a binary missing) fails instead of skipping, and a suite
  that skipped tests (`@tag :skip`) fails (`fail_on_skipped/0`).
  """

  @doc "True under CI: `TRELLIS_CI` is `1` or `true`."
  @spec ci? :: boolean
  def ci?, do: System.get_env("TRELLIS_CI") in ["1", "true"]

  @doc """
  Under CI, makes a suite that skipped any test exit non-zero with a message
  saying how many; call before `ExUnit.start/1`. Outside CI it does nothing
  (ExUnit reports skipped tests in its summary).
  """
  @spec fail_on_skipped :: :ok
  def fail_on_skipped do
    if ci?() do
      ExUnit.after_suite(fn %{skipped: skipped} ->
        if skipped > 0 do
          IO.puts(:stderr, """
          FAILED: #{skipped} test(s) were skipped under CI (TRELLIS_CI=#{System.get_env("TRELLIS_CI")}): \
          a skipped test passes without running. Remove the skip or the test.\
          """)

          # The suite's exit status is mix's; ending the VM with a non-zero
          # status after it is the one way an after_suite callback can set it.
          System.at_exit(fn
            0 -> exit({:shutdown, 1})
            _ -> :ok
          end)
        end
      end)
    end

    :ok
  end
end
