defmodule Trellis.EventsTest do
  use ExUnit.Case, async: true

  import ExUnit.CaptureLog

  alias Trellis.Events

  def record(kind, payload, metadata), do: send(self(), {:event, kind, payload, metadata})
  def explode(_kind, _payload, _metadata), do: raise("handler bug")

  test "dispatch calls the handler with the kind, payload and instance" do
    assert Events.dispatch({__MODULE__, :record}, "log", %{"level" => "info"}, %{instance: "db/s"}) ==
             :ok

    assert_received {:event, "log", %{"level" => "info"}, %{instance: "db/s"}}
  end

  test "a handler that raises is logged and does not take the caller down" do
    log =
      capture_log(fn ->
        assert Events.dispatch({__MODULE__, :explode}, "metrics", %{}, %{instance: nil}) == :ok
      end)

    assert log =~ "event handler failed on a metrics event: handler bug"
  end

  test "the default handler logs error events" do
    log =
      capture_log(fn ->
        Events.default("error", %{"code" => "protocol", "message" => "bad frame"}, %{
          instance: "db/s"
        })
      end)

    assert log =~ "trellis-port (db/s): protocol: bad frame"
  end
end
