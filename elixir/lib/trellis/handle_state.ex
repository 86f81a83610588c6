defmodule Trellis.HandleState do
  @moduledoc false

  # Per-handle state shared, without a process, by the owner and every
  # caller: one :atomics array holding the call id counter, the handle's
  # lifecycle and the port's exit status. It outlives the owner process, so a
  # caller that finds the owner gone can still say why.

  alias Trellis.Error

  @call_id 1
  @lifecycle 2
  @exit_status 3

  @open 0
  @shutting_down 1
  @exited 2
  @stopped 3

  @type t :: :atomics.atomics_ref()

  @spec new() :: t
  def new, do: :atomics.new(3, signed: true)

  @doc "A call id unique on this handle (1, 2, 3, ...)."
  @spec next_call_id(t) :: pos_integer
  def next_call_id(state), do: :atomics.add_get(state, @call_id, 1)

  @spec open?(t) :: boolean
  def open?(state), do: :atomics.get(state, @lifecycle) == @open

  @doc """
  Whether a call may still be written to the port: while the handle shuts
  down it may (the port program answers it with the shutdown's error).
  """
  @spec accepting?(t) :: boolean
  def accepting?(state), do: :atomics.get(state, @lifecycle) in [@open, @shutting_down]

  @doc "shutdown/1 was asked for: from now on the handle reads as shut down."
  @spec mark_shutting_down(t) :: :ok
  def mark_shutting_down(state), do: transition(state, @shutting_down)

  @doc "The port program exited with `status` (unless it was being shut down)."
  @spec mark_exited(t, integer) :: :ok
  def mark_exited(state, status) do
    :atomics.put(state, @exit_status, status)
    transition(state, @exited)
  end

  @doc "The owner stopped for a reason of its own."
  @spec mark_stopped(t) :: :ok
  def mark_stopped(state), do: transition(state, @stopped)

  # Only the first move away from :open counts, so a shutdown stays a
  # shutdown when the port then exits.
  defp transition(state, to) do
    _ = :atomics.compare_exchange(state, @lifecycle, @open, to)
    :ok
  end

  @doc "The error a call on this handle gets once it is no longer open."
  @spec closed_error(t) :: Error.t()
  def closed_error(state) do
    case :atomics.get(state, @lifecycle) do
      @shutting_down ->
        shut_down_error()

      @exited ->
        exit_error(:atomics.get(state, @exit_status))

      _stopped_or_open ->
        Error.new(:connection, "the handle is closed: its owner process has stopped")
    end
  end

  @doc false
  def shut_down_error, do: Error.new(:validation, "the handle was shut down")

  @doc "The status recorded for a port that closed without reporting one."
  @spec unknown_exit_status() :: integer
  def unknown_exit_status, do: -1

  @doc "The error for a port program that exited with `status`."
  @spec exit_error(integer) :: Error.t()
  def exit_error(-1), do: Error.new(:connection, "the port program exited (its pipe closed)")

  def exit_error(3) do
    Error.new(:protocol, "the port program lost the frame boundaries and exited (status 3)")
  end

  def exit_error(status),
    do: Error.new(:connection, "the port program exited with status #{status}")
end
