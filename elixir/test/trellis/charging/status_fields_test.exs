defmodule Trellis.Charging.StatusFieldsTest do
  # The %Trellis.Status{} fields of issue 13, through the real port: their
  # values for a healthy transform, and capture_failure for a disruption,
  # which keeps an operator's pause kind.
  use ExUnit.Case, async: true

  alias Trellis.Test.{Database, SimplePG}

  import Trellis.Test.Eventually, only: [eventually: 1]

  @moduletag :port
  @moduletag :capture_log
  @moduletag timeout: 120_000

  setup do
    %{url: url, pg: pg} = Database.open!("status_fields")

    SimplePG.query!(pg, """
    CREATE TABLE widgets (id int PRIMARY KEY, price numeric);
    INSERT INTO widgets SELECT g, g FROM generate_series(1, 50) g;
    """)

    :ok = Trellis.migrate(Trellis.connect!(url: url))
    trellis = Trellis.connect!(url: url, staging: true, drain_threads: 1)
    %{trellis: trellis, pg: pg}
  end

  test "a healthy transform holds no keys and has no capture failure, upstream pause, gap or correction",
       %{trellis: trellis} do
    {:ok, _} = Trellis.define(trellis, "TRANSFORM prices FROM widgets SELECT price AS price")
    :ok = Trellis.await_converged(trellis, Trellis.watermark_token!(trellis))

    assert eventually(fn -> match?({:ok, %{status: :live}}, Trellis.status(trellis, "prices")) end)

    assert {:ok,
            %Trellis.Status{
              status: :live,
              held_keys: 0,
              drain_failure: nil,
              capture_failure: nil,
              paused_upstream_columns: [],
              source_index_gaps: [],
              correcting: []
            }} = Trellis.status(trellis, "prices")
  end

  test "a disruption is a capture_failure of kind :disruption; an operator's pause keeps its kind",
       %{trellis: trellis, pg: pg} do
    {:ok, _} = Trellis.define(trellis, "TRANSFORM prices FROM widgets SELECT price AS price")
    {:ok, _} = Trellis.define(trellis, "TRANSFORM doubled FROM widgets SELECT price * 2 AS p2")
    :ok = Trellis.await_converged(trellis, Trellis.watermark_token!(trellis))
    {:ok, :paused} = Trellis.apply(trellis, "PAUSE TRANSFORM doubled")
    before = DateTime.utc_now()

    SimplePG.query!(pg, """
    ALTER TABLE widgets DISABLE TRIGGER ALL;
    UPDATE widgets SET price = price + 1 WHERE id = 1;
    ALTER TABLE widgets ENABLE TRIGGER ALL;
    """)

    assert {:ok, [_]} = Trellis.detect_capture_disruptions(trellis)

    {:ok, running} = Trellis.status(trellis, "prices")
    assert %Trellis.Status{status: :paused, paused_kind: :disruption} = running

    assert %Trellis.CaptureFailure{kind: :disruption, since: since, message: message} =
             running.capture_failure

    assert DateTime.compare(since, DateTime.add(before, -5)) == :gt
    assert message =~ "RESUME TRANSFORM prices"

    {:ok, paused} = Trellis.status(trellis, "doubled")
    assert %Trellis.Status{status: :paused, paused_kind: :operator} = paused
    assert %Trellis.CaptureFailure{kind: :disruption} = paused.capture_failure
    assert paused.capture_failure.message =~ "RESUME TRANSFORM doubled"

    # RESUME reinstalls capture and rebuilds: the failure is gone.
    for name <- ["prices", "doubled"] do
      {:ok, {:resumed, [^name]}} = Trellis.apply(trellis, "RESUME TRANSFORM #{name}")
    end

    # await_converged waits for the data; the state reads :live a moment later.
    for name <- ["prices", "doubled"] do
      assert eventually(fn ->
               match?(
                 {:ok, %Trellis.Status{status: :live, capture_failure: nil}},
                 Trellis.status(trellis, name)
               )
             end)
    end
  end
end
