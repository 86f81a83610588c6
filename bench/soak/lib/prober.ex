defmodule Soak.Prober do
  @moduledoc false

  # The lag a reader sees: once a second, a watermark token and the wait
  # until it has converged. Each sample is `{at_ms, ms | :failed}`.

  alias Soak.Convergence

  @interval_ms 1_000

  def run(ctx, stop), do: loop(ctx, stop, [])

  defp loop(ctx, stop, samples) do
    if :atomics.get(stop, 1) == 1 do
      Enum.reverse(samples)
    else
      at = Convergence.now() - ctx.started

      sample =
        case Convergence.once(60_000) do
          {:ok, ms} -> {at, ms}
          {:error, _} -> {at, :failed}
        end

      Process.sleep(@interval_ms)
      loop(ctx, stop, [sample | samples])
    end
  end
end
