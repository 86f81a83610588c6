defmodule Soak.Convergence do
  @moduledoc false

  # "Converged" as a user asks it: a watermark token from any live node,
  # then await_converged on any live node. Each attempt is bounded; a
  # failed attempt (no node answering, the database restarting, a timeout)
  # is retried until the deadline.

  alias Soak.Fleet

  @doc "One try: `{:ok, ms}` (how long the wait took) or `{:error, reason}`."
  def once(timeout_ms) do
    started = now()

    with {:ok, token} <- Fleet.call(:watermark_token, [], 10_000),
         :ok <- Fleet.call(:await_converged, [token, [timeout_ms: timeout_ms]], timeout_ms) do
      {:ok, now() - started}
    else
      {:error, reason} -> {:error, reason}
      other -> {:error, other}
    end
  end

  @doc """
  Retries `once/1` until a token taken at or after the call converges;
  returns `{:ok, ms since the call}` or `{:error, last reason}` after
  `deadline_ms`.
  """
  def await(deadline_ms, attempt_ms \\ 30_000) do
    started = now()
    retry(started, started + deadline_ms, attempt_ms, nil)
  end

  defp retry(started, deadline, attempt_ms, last) do
    if now() > deadline do
      {:error, last}
    else
      case once(min(attempt_ms, max(deadline - now(), 1_000))) do
        {:ok, _} ->
          {:ok, now() - started}

        {:error, reason} ->
          Process.sleep(200)
          retry(started, deadline, attempt_ms, reason)
      end
    end
  end

  def now, do: System.monotonic_time(:millisecond)
end
