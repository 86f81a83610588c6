defmodule Trellis.TestSupport do
  @moduledoc """
  Helpers for test suites whose fixtures are loaded with triggers disabled.

  A loader that turns triggers off for a load (`ALTER TABLE ... DISABLE
  TRIGGER ALL`, `pg_restore --disable-triggers`) turns Trellis's capture off
  too, and `ENABLE TRIGGER ALL` afterwards leaves it firing in origin
  sessions only. The rows loaded meanwhile never reached a target, so
  Trellis pauses every transform that reads such a table (`paused_kind:
  :disruption`, see `Trellis.detect_capture_disruptions/1`) rather than let
  a test read wrong data, and waits for a RESUME.
  `resume_capture_disruptions/2` is that RESUME for a whole suite:

      setup do
        # ... load the fixtures with triggers disabled, then re-enabled ...
        {:ok, _resumed} = Trellis.TestSupport.resume_capture_disruptions(trellis)
        :ok
      end

  The handle needs its staging worker and a drain worker (`staging: true,
  drain_threads: 1`): a resumed transform rebuilds through them.
  """

  alias Trellis.Error

  @default_timeout_ms 30_000
  @poll_ms 20

  defmodule ResumeRefused do
    @moduledoc """
    Raised by `Trellis.TestSupport.resume_capture_disruptions!/2` when the
    engine refused to resume some transforms. `:refused` maps each one's
    name to the `Trellis.Error` its RESUME got; `:resumed` lists those that
    were resumed and have caught up.
    """
    defexception refused: %{}, resumed: []

    @impl true
    def message(%__MODULE__{refused: refused}) do
      details =
        refused
        |> Enum.sort()
        |> Enum.map_join("; ", fn {name, %Error{message: message}} -> "#{name}: #{message}" end)

      "RESUME refused after a capture disruption (they stay paused): " <> details
    end
  end

  @doc """
  Resumes every transform paused because its capture was disrupted, waits
  until each is `:live` and every write committed so far has reached its
  targets, and returns the names of those it resumed (`[]` when nothing was
  disrupted).

  It first pauses the readers of any disrupted table itself
  (`Trellis.detect_capture_disruptions/1`), so it does not wait for the
  staging worker's next look. Only transforms paused with `paused_kind:
  :disruption` are resumed: one an operator paused, or one paused for any
  other reason, stays paused. When the engine refuses a RESUME (its table is
  gone, say), that transform stays paused, the others are still resumed and
  waited for, and the result is `{:error, {:resume_refused, refused}}`, a map
  of transform name to the `Trellis.Error` its RESUME got.

  ## Options

    * `:timeout_ms` - how long to wait for the resumed transforms to catch
      up, in all (default 30 000); past it the result is `{:error,
      %Trellis.Error{code: :timeout}}`. A value that is not an integer
      raises `ArgumentError`; a negative one is a `:validation` error.

  ## Example

      {:ok, ["widget_prices"]} = Trellis.TestSupport.resume_capture_disruptions(trellis)
  """
  @spec resume_capture_disruptions(Trellis.handle(), keyword) ::
          {:ok, [String.t()]}
          | {:error, {:resume_refused, %{String.t() => Error.t()}}}
          | {:error, Error.t()}
  def resume_capture_disruptions(handle, opts \\ []) do
    with {:ok, timeout_ms} <- timeout_option(opts),
         deadline = System.monotonic_time(:millisecond) + timeout_ms,
         {:ok, _tables} <- Trellis.detect_capture_disruptions(handle),
         {:ok, names} <- disrupted(handle) do
      {resumed, refused} = resume_each(handle, names)

      with :ok <- await_live(handle, resumed, deadline),
           :ok <- await_converged(handle, deadline) do
        if refused == %{}, do: {:ok, resumed}, else: {:error, {:resume_refused, refused}}
      end
    end
  end

  @doc """
  Like `resume_capture_disruptions/2`, but returns the names it resumed, or
  raises `Trellis.TestSupport.ResumeRefused` (some RESUME was refused) or
  `Trellis.Error`.

  ## Example

      [] = Trellis.TestSupport.resume_capture_disruptions!(trellis, timeout_ms: 5_000)
  """
  @spec resume_capture_disruptions!(Trellis.handle(), keyword) :: [String.t()]
  def resume_capture_disruptions!(handle, opts \\ []) do
    case resume_capture_disruptions(handle, opts) do
      {:ok, resumed} ->
        resumed

      {:error, {:resume_refused, refused}} ->
        {:ok, definitions} = Trellis.definitions(handle)
        live = for %{name: name, status: :live} <- definitions, do: name
        raise ResumeRefused, refused: refused, resumed: live -- Map.keys(refused)

      {:error, %Error{} = error} ->
        raise error
    end
  end

  # As everywhere in Trellis: a wrong type raises, a bad value is a
  # :validation error naming the option.
  defp timeout_option(opts) do
    timeout_ms = Keyword.validate!(opts, timeout_ms: @default_timeout_ms)[:timeout_ms]

    cond do
      not is_integer(timeout_ms) ->
        raise ArgumentError, "option :timeout_ms must be an integer, got: #{inspect(timeout_ms)}"

      timeout_ms < 0 ->
        {:error,
         Error.new(:validation, "option :timeout_ms must be non-negative, got: #{timeout_ms}")}

      true ->
        {:ok, timeout_ms}
    end
  end

  # The transforms paused because their capture was disrupted, by name.
  defp disrupted(handle) do
    with {:ok, definitions} <- Trellis.definitions(handle) do
      Enum.reduce_while(definitions, {:ok, []}, fn
        %{status: :paused, name: name}, {:ok, acc} ->
          case Trellis.status(handle, name) do
            {:ok, %{paused_kind: :disruption}} -> {:cont, {:ok, acc ++ [name]}}
            {:ok, _other} -> {:cont, {:ok, acc}}
            {:error, _} = error -> {:halt, error}
          end

        _running, acc ->
          {:cont, acc}
      end)
    end
  end

  defp resume_each(handle, names) do
    Enum.reduce(names, {[], %{}}, fn name, {resumed, refused} ->
      # Definition names are in the form statements take back (Trellis.Applied).
      case Trellis.apply(handle, "RESUME TRANSFORM " <> name) do
        {:ok, {:resumed, _}} -> {resumed ++ [name], refused}
        {:error, %Error{} = error} -> {resumed, Map.put(refused, name, error)}
      end
    end)
  end

  defp await_live(_handle, [], _deadline), do: :ok

  defp await_live(handle, [name | rest] = names, deadline) do
    case Trellis.status(handle, name) do
      {:ok, %{status: :live}} ->
        await_live(handle, rest, deadline)

      {:ok, %{status: status}} ->
        if System.monotonic_time(:millisecond) >= deadline do
          {:error,
           Error.new(
             :timeout,
             "#{name} did not catch up in time after its RESUME (it is #{status}); " <>
               "is a staging worker and a drain worker running for this instance?"
           )}
        else
          Process.sleep(@poll_ms)
          await_live(handle, names, deadline)
        end

      {:error, _} = error ->
        error
    end
  end

  defp await_converged(handle, deadline) do
    with {:ok, token} <- Trellis.watermark_token(handle) do
      # At least 1 ms: a budget of 0 is not a budget (await_converged/3 refuses it).
      remaining = max(deadline - System.monotonic_time(:millisecond), 1)
      Trellis.await_converged(handle, token, timeout_ms: remaining)
    end
  end
end
