defmodule Trellis.TelemetryTest do
  # This package has no :telemetry, as a host without it: calls emit nothing
  # and pay one :persistent_term read. The events themselves are asserted
  # with a real handler in elixir/examples/ecto_app.
  use ExUnit.Case, async: true

  test "without :telemetry the events are off, and the answer is remembered" do
    refute Code.ensure_loaded?(:telemetry)
    refute Trellis.Telemetry.enabled?()
    assert :persistent_term.get({Trellis.Telemetry, :enabled}) == false
  end

  test "a span without :telemetry returns what the call returned" do
    handle = %{instance: "db/trellis"}
    assert Trellis.Telemetry.span(handle, "ping", fn -> {:ok, :pong} end) == {:ok, :pong}
  end
end
