defmodule Trellis.HandleStateTest do
  use ExUnit.Case, async: true

  alias Trellis.{Error, HandleState}

  test "call ids count up from 1" do
    state = HandleState.new()
    assert Enum.map(1..3, fn _ -> HandleState.next_call_id(state) end) == [1, 2, 3]
  end

  test "a handle being shut down still accepts calls, a closed one does not" do
    state = HandleState.new()
    assert HandleState.open?(state) and HandleState.accepting?(state)
    HandleState.mark_shutting_down(state)
    refute HandleState.open?(state)
    assert HandleState.accepting?(state)
    HandleState.mark_stopped(state)
    assert HandleState.accepting?(state), "the shutdown stays the handle's story"
  end

  test "a shutdown stays a shutdown when the port then exits" do
    state = HandleState.new()
    HandleState.mark_shutting_down(state)
    HandleState.mark_exited(state, 0)
    assert HandleState.closed_error(state) == Error.new(:validation, "the handle was shut down")
  end

  test "an exit names its status; status 3 is a protocol error" do
    for {status, code, words} <- [
          {137, :connection, "the port program exited with status 137"},
          {3, :protocol, "lost the frame boundaries"},
          {-1, :connection, "its pipe closed"}
        ] do
      state = HandleState.new()
      HandleState.mark_exited(state, status)
      refute HandleState.accepting?(state)
      assert %Error{code: ^code, message: message} = HandleState.closed_error(state)
      assert message =~ words
    end
  end

  test "an owner that stopped without a port exit is a connection error" do
    state = HandleState.new()
    HandleState.mark_stopped(state)
    assert %Error{code: :connection, message: message} = HandleState.closed_error(state)
    assert message =~ "owner process has stopped"
  end
end
