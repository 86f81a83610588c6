defmodule Trellis.Test.Eventually do
  @moduledoc """
  Polling for a condition that background work makes true: `eventually/2`
  calls the function every 20 ms until it returns a truthy value, or gives
  up after `tries` calls (30 s by default) and returns false.
  """

  @spec eventually((() -> any), pos_integer) :: boolean
  def eventually(fun, tries \\ 1500) do
    cond do
      fun.() -> true
      tries <= 1 -> false
      true -> Process.sleep(20) && eventually(fun, tries - 1)
    end
  end
end
