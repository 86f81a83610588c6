defmodule Trellis.TestSupportTest do
  # Trellis.TestSupport.resume_capture_disruptions/2 after a fixture load
  # with triggers disabled, through the real port.
  use ExUnit.Case, async: true

  alias Trellis.Test.{Database, SimplePG}
  alias Trellis.TestSupport

  @moduletag :port
  @moduletag :capture_log
  @moduletag timeout: 120_000

  setup do
    %{url: url, pg: pg} = Database.open!("test_support")

    SimplePG.query!(pg, """
    CREATE TABLE widgets (id int PRIMARY KEY, name text, price numeric);
    INSERT INTO widgets SELECT g, 'w' || g, g FROM generate_series(1, 50) g;
    CREATE TABLE gadgets (id int PRIMARY KEY, v int);
    """)

    migrator = Trellis.connect!(url: url)
    :ok = Trellis.migrate(migrator)
    :ok = Trellis.shutdown(migrator)
    trellis = Trellis.connect!(url: url, staging: true, drain_threads: 1)

    for statement <- [
          "TRANSFORM prices FROM widgets SELECT price AS price",
          "TRANSFORM names FROM widgets SELECT name AS name",
          "TRANSFORM held FROM widgets SELECT price * 2 AS twice",
          "TRANSFORM gadget_values FROM gadgets SELECT v AS v"
        ] do
      {:transform_defined, _} = Trellis.define!(trellis, statement)
    end

    {:ok, :paused} = Trellis.apply(trellis, "PAUSE TRANSFORM held")
    :ok = Trellis.await_converged(trellis, Trellis.watermark_token!(trellis))

    %{trellis: trellis, pg: pg}
  end

  defp load_fixtures_without_triggers(pg) do
    SimplePG.query!(pg, """
    ALTER TABLE widgets DISABLE TRIGGER ALL;
    UPDATE widgets SET price = price + 1000 WHERE id <= 20;
    INSERT INTO widgets VALUES (51, 'fixture', 5);
    ALTER TABLE widgets ENABLE TRIGGER ALL;
    """)
  end

  defp differences(pg, target, query) do
    SimplePG.scalar!(pg, """
    SELECT count(*) FROM ((TABLE #{target} EXCEPT #{query}) UNION ALL
                          (#{query} EXCEPT TABLE #{target})) d
    """)
  end

  test "with nothing disrupted it resumes nothing", %{trellis: trellis} do
    assert {:ok, []} = TestSupport.resume_capture_disruptions(trellis)
    assert [] = TestSupport.resume_capture_disruptions!(trellis, timeout_ms: 5_000)
  end

  test "resumes the disrupted readers, which rebuild and catch up; an operator's pause stays",
       %{trellis: trellis, pg: pg} do
    load_fixtures_without_triggers(pg)

    assert {:ok, ["names", "prices"]} = TestSupport.resume_capture_disruptions(trellis)

    assert differences(pg, "prices", "SELECT id, price FROM widgets") == "0"
    assert differences(pg, "names", "SELECT id, name FROM widgets") == "0"
    assert {:ok, %Trellis.Status{status: :live}} = Trellis.status(trellis, "prices")

    assert {:ok, %Trellis.Status{status: :paused, paused_kind: :operator}} =
             Trellis.status(trellis, "held")

    assert {:ok, %Trellis.Status{status: :live}} = Trellis.status(trellis, "gadget_values")
    assert {:ok, []} = Trellis.detect_capture_disruptions(trellis)

    # The operator's RESUME rebuilds the transform that missed the load too.
    assert {:ok, {:resumed, ["held"]}} = Trellis.apply(trellis, "RESUME TRANSFORM held")
    :ok = Trellis.await_converged(trellis, Trellis.watermark_token!(trellis))
    assert differences(pg, "held", "SELECT id, price * 2 AS twice FROM widgets") == "0"
  end

  test "a RESUME the engine refuses leaves that transform paused and the rest resumed",
       %{trellis: trellis, pg: pg} do
    load_fixtures_without_triggers(pg)
    SimplePG.query!(pg, "DROP TABLE gadgets")

    assert {:error, {:resume_refused, %{"gadget_values" => %Trellis.Error{code: :not_found}}}} =
             TestSupport.resume_capture_disruptions(trellis)

    assert {:ok, %Trellis.Status{status: :live}} = Trellis.status(trellis, "prices")

    assert {:ok, %Trellis.Status{status: :paused, paused_kind: :disruption}} =
             Trellis.status(trellis, "gadget_values")

    error =
      assert_raise TestSupport.ResumeRefused, fn ->
        TestSupport.resume_capture_disruptions!(trellis)
      end

    assert Exception.message(error) =~ "gadget_values"
    assert Exception.message(error) =~ "DROP TRANSFORM"
    assert "prices" in error.resumed
  end

  test "options are checked", %{trellis: trellis} do
    assert {:error, %Trellis.Error{code: :validation, message: message}} =
             TestSupport.resume_capture_disruptions(trellis, timeout_ms: -1)

    assert message == "option :timeout_ms must be non-negative, got: -1"

    assert_raise ArgumentError, ~r/option :timeout_ms must be an integer/, fn ->
      TestSupport.resume_capture_disruptions(trellis, timeout_ms: 1.5)
    end

    assert_raise ArgumentError, fn -> TestSupport.resume_capture_disruptions(trellis, wait: 1) end
  end
end
