defmodule Trellis.EnumsTest do
  # The engine defines the wire names of transform states, pause kinds and
  # column states once and announces them in the port's hello frame; the
  # package's atoms must cover exactly those sets.
  use ExUnit.Case, async: true

  alias Trellis.{Enums, PortBinary, Protocol}

  @moduletag :port

  defp hello do
    {:ok, path} = PortBinary.path()
    options = [:binary, {:packet, 4}, :nouse_stdio, :exit_status, args: ["--log-level", "error"]]
    port = Port.open({:spawn_executable, path}, options)

    receive do
      {^port, {:data, body}} ->
        Port.close(port)
        {:ok, {:event, "hello", payload}} = Protocol.decode_message(body)
        payload
    after
      10_000 -> flunk("the port sent no hello")
    end
  end

  test "the Elixir enums are exactly the sets the port's hello announces" do
    announced = hello()["enums"]

    for {set, names} <- Enums.wire_names() do
      assert Enum.sort(announced[set]) == Enum.sort(names), "enum set #{set}"
    end

    assert Enum.all?(announced["status"], &(Enums.transform_state(&1) != :unknown))
    assert Enum.all?(announced["paused_kind"], &(Enums.paused_kind(&1) != :unknown))
    assert Enum.all?(announced["column_state"], &(Enums.column_state(&1) != :unknown))
  end
end
