defmodule Trellis.Call do
  @moduledoc false

  # One call on a handle, run entirely in the calling process:
  #
  #   1. take a call id from the handle's counter;
  #   2. monitor the owner with a reply alias, and put {call_id, self(), alias}
  #      in the handle's ETS table, where the owner looks it up;
  #   3. write the request frame to the port with Port.command/2;
  #   4. wait in a receive for {alias, reply_body} (the owner forwards the
  #      reply's bytes undecoded), {alias, {:error, error}} (the owner is going
  #      away) or the owner's DOWN.
  #
  # The budget is counted from submission and is the whole wait: the request
  # carries a slightly smaller budget (port_budget_ms/1), so the port program
  # cancels the work on the server and answers :timeout inside it. Should
  # that answer not arrive in time (a port that is stuck), the caller writes
  # a cancel frame at the deadline itself, removes its entry and returns a
  # :timeout error. The alias is deactivated
  # with the monitor, so a reply arriving later is dropped by the runtime and
  # never lands in the caller's mailbox. A caller killed mid-call leaves its
  # entry behind; the owner's sweep finds it and cancels the call.
  #
  # Nothing here goes through the owner process: calls from different
  # processes run in parallel and only meet at the port's write lock.

  alias Trellis.{Error, HandleState, Protocol}
  alias Trellis.Protocol.Frame

  @doc """
  The budget stamped on the request for a call whose own budget is
  `timeout_ms`: a tenth less (at least 20 ms, at most 1 s), so the port
  program's timeout reply, which follows its server-side cancel, reaches the
  caller before the caller's own deadline.
  """
  @spec port_budget_ms(pos_integer) :: pos_integer
  def port_budget_ms(timeout_ms), do: max(timeout_ms - margin_ms(timeout_ms), 1)

  @doc "What the port program keeps of a budget for its reply to travel back."
  @spec margin_ms(pos_integer) :: pos_integer
  def margin_ms(timeout_ms), do: timeout_ms |> div(10) |> max(20) |> min(1_000)

  @doc """
  Runs `op` with `args` on the handle and returns its decoded value.

  `opts`: `:timeout_ms` - the call's budget (default: the handle's).
  """
  @spec call(Trellis.handle(), String.t(), map, keyword) ::
          {:ok, term} | {:error, Error.t()}
  def call(handle, op, args, opts \\ []) when is_binary(op) and is_map(args) do
    with {:ok, handle} <- Trellis.resolve(handle) do
      timeout_ms = Keyword.get(opts, :timeout_ms, handle.timeout_ms)

      Trellis.Telemetry.span(handle, op, fn ->
        if HandleState.accepting?(handle.state),
          do: run(handle, op, args, timeout_ms),
          else: {:error, HandleState.closed_error(handle.state)}
      end)
    end
  end

  defp run(handle, op, args, timeout_ms) do
    deadline = System.monotonic_time(:millisecond) + timeout_ms
    call_id = HandleState.next_call_id(handle.state)
    frame = Protocol.encode_request(call_id, op, args, port_budget_ms(timeout_ms))

    if IO.iodata_length(frame) > Frame.max_body_bytes() do
      {:error, Error.new(:validation, "the #{op} request is larger than the 16 MiB frame limit")}
    else
      ref = :erlang.monitor(:process, handle.owner, alias: :reply_demonitor)

      if submit(handle, call_id, ref, frame),
        do: await(handle, call_id, ref, timeout_ms, deadline),
        else: closed(handle, call_id, ref)
    end
  end

  # False when the owner's table is gone (the owner has stopped). A port that
  # closed a moment ago is not checked here: its owner is about to answer
  # every registered caller with the reason, which is better than guessing.
  defp submit(handle, call_id, ref, frame) do
    :ets.insert(handle.table, {call_id, self(), ref})
    write(handle, frame)
    true
  rescue
    ArgumentError -> false
  end

  defp await(handle, call_id, ref, timeout_ms, deadline) do
    receive do
      {^ref, body} when is_binary(body) -> decode_reply(body, call_id)
      {^ref, {:error, %Error{}} = error} -> error
      {:DOWN, ^ref, :process, _owner, _reason} -> {:error, HandleState.closed_error(handle.state)}
    after
      max(deadline - System.monotonic_time(:millisecond), 0) ->
        :erlang.demonitor(ref, [:flush])
        forget(handle, call_id)
        write(handle, Protocol.encode_cancel(call_id))

        {:error,
         Error.new(:timeout, "no reply to the call within its budget of #{timeout_ms} ms")}
    end
  end

  defp closed(handle, call_id, ref) do
    :erlang.demonitor(ref, [:flush])
    forget(handle, call_id)
    {:error, HandleState.closed_error(handle.state)}
  end

  defp forget(handle, call_id) do
    :ets.delete(handle.table, call_id)
  rescue
    ArgumentError -> true
  end

  defp write(handle, iodata) do
    Port.command(handle.port, iodata)
  rescue
    ArgumentError -> false
  end

  defp decode_reply(body, call_id) do
    case Protocol.decode_message(body) do
      {:ok, {:reply, ^call_id, {:ok, value}}} ->
        {:ok, value}

      {:ok, {:reply, ^call_id, {:error, wire}}} ->
        {:error, Error.from_wire(wire)}

      {:error, class} ->
        {:error, Error.new(:protocol, "the reply to call #{call_id} did not decode: #{class}")}
    end
  end
end
