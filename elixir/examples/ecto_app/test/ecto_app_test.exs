defmodule EctoAppTest do
  use ExUnit.Case, async: false

  import Ecto.Query, only: [where: 3]

  alias EctoApp.{Gadget, Repo, Widget}

  @widget_prices "TRANSFORM widget_prices FROM widgets SELECT name AS name, price AS price WHERE price > 0 GRANT SELECT TO ecto_app_reader"
  @gadget_labels "TRANSFORM gadget_labels FROM gadgets SELECT upper(label) AS label"

  @tag phase: :migrated
  test "after ecto.migrate the transforms are defined, and live once the app writes through the Repo" do
    assert definitions() == %{
             "widget_prices" => @widget_prices,
             "gadget_labels" => @gadget_labels
           }

    assert %Trellis.Status{status: :paused, paused_kind: :operator} = status("gadget_labels")

    write_widgets()
    await_live("widget_prices")
    assert_widget_prices_equal()
    assert_only_the_reader_reads_widget_prices()
  end

  @tag phase: :migrated
  test "every call on the handle is a [:trellis, :call] span seen by a real :telemetry handler" do
    events = for e <- [:start, :stop, :exception], do: [:trellis, :call, e]
    :ok = :telemetry.attach_many("ecto-app-test", events, &__MODULE__.forward_event/4, self())
    on_exit(fn -> :telemetry.detach("ecto-app-test") end)

    assert Trellis.Telemetry.enabled?()
    assert {:ok, %Trellis.Status{}} = Trellis.status(EctoApp.Trellis, "widget_prices")

    assert_receive {[:trellis, :call, :start], %{system_time: _, monotonic_time: _},
                    %{op: "status", instance: "ecto_app/trellis"}}

    assert_receive {[:trellis, :call, :stop], %{duration: duration},
                    %{op: "status", instance: "ecto_app/trellis", result: :ok}}

    assert is_integer(duration) and duration > 0

    assert {:error, %Trellis.Error{code: :not_found}} =
             Trellis.status(EctoApp.Trellis, "no_such_transform")

    assert_receive {[:trellis, :call, :stop], %{duration: _},
                    %{op: "status", result: {:error, %Trellis.Error{code: :not_found}}}}

    refute_received {[:trellis, :call, :exception], _, _}

    # A call that raises is a bug; a value the codec cannot encode is one way
    # to raise inside the span, which reports it and lets it through.
    assert catch_error(Trellis.Call.call(EctoApp.Trellis, "status", %{"target" => self()}))

    assert_receive {[:trellis, :call, :exception], %{duration: _},
                    %{op: "status", instance: "ecto_app/trellis", kind: :error}}
  end

  @tag phase: :migrated
  test "define and the migration guard return one name, the form statements and reads take back" do
    statement = ~s(TRANSFORM "Gadget Copies" FROM gadgets SELECT label AS label)
    name = ~s("Gadget Copies")

    assert {:ok, {:transform_defined, ^name}} = Trellis.define(EctoApp.Trellis, statement)
    # The guard over a transform that exists with this definition, as a
    # migration run again meets it: the same name as define's.
    assert {:already_defined, ^name} =
             Trellis.Migration.run(Repo, :define, statement, if_not_defined: true)

    assert {:already_defined, "gadget_labels"} =
             Trellis.Migration.run(Repo, :define, @gadget_labels, if_not_defined: true)

    # Passed back unchanged, to a read and to the statements.
    assert %Trellis.Status{name: ^name, target_table: "public.Gadget Copies"} = status(name)
    assert {:ok, :paused} = Trellis.apply(EctoApp.Trellis, "PAUSE TRANSFORM #{name}")
    assert {:ok, {:dropped, ^name}} = Trellis.apply(EctoApp.Trellis, "DROP TRANSFORM #{name}")
  after
    Trellis.apply(EctoApp.Trellis, ~s(PAUSE TRANSFORM "Gadget Copies"))
    Trellis.apply(EctoApp.Trellis, ~s(DROP TRANSFORM "Gadget Copies"))
  end

  @tag phase: :rolled_back
  test "ecto.rollback ran the down paths: gadget_labels paused and dropped, its table gone" do
    assert definitions() == %{"widget_prices" => @widget_prices}
    refute table?("gadget_labels")
    refute table?("gadgets")
    assert migrated_versions() == [20_260_101_000_001, 20_260_101_000_002]
  end

  @tag phase: :refused
  test "refused migrations applied nothing: no table, no transform, no schema_migrations row" do
    assert definitions() == %{
             "widget_prices" => @widget_prices,
             "gadget_labels" => @gadget_labels
           }

    refute table?("extras")
    assert migrated_versions() == Enum.map(1..4, &(20_260_101_000_000 + &1))
  end

  @tag phase: :dump_race
  test "a define that commits while pg_dump runs makes mix ecto.dump dump again" do
    path = Path.expand("tmp/race.sql")
    File.rm(path)
    parent = self()

    # pg_dump takes its snapshot, then waits for a lock this transaction holds
    # on widgets, while the define below commits.
    locker =
      spawn_link(fn ->
        # The lock is held for as long as the test needs (pg_dump and a define
        # must both queue behind it), not Ecto's default 15 s query timeout.
        Repo.transaction(
          fn ->
            Repo.query!("LOCK TABLE widgets IN ACCESS EXCLUSIVE MODE")
            send(parent, :locked)
            receive do: (:release -> :ok)
          end,
          timeout: :infinity
        )

        send(parent, :released)
      end)

    assert_receive :locked, 5_000

    dump =
      Task.async(fn -> System.cmd("mix", ["ecto.dump", "-d", path], stderr_to_stdout: true) end)

    wait_until(fn -> pg_dump_waiting?() end)

    assert {:ok, {:transform_defined, "race_labels"}} =
             Trellis.define(
               EctoApp.Trellis,
               "TRANSFORM race_labels FROM gadgets SELECT label AS label"
             )

    send(locker, :release)
    assert_receive :released, 5_000
    {output, status} = Task.await(dump, 120_000)

    assert status == 0, output
    assert output =~ "changed during the dump; dumping again (2 of 4)"
    file = File.read!(path)
    assert file =~ "CREATE TABLE public.race_labels"
    assert file =~ "'race_labels'"
  after
    Trellis.apply(EctoApp.Trellis, "PAUSE TRANSFORM race_labels")
    Trellis.apply(EctoApp.Trellis, "DROP TRANSFORM race_labels")
  end

  # Run with `mix test --no-start`: the application (and its workers) not
  # yet started on the freshly loaded database.
  @tag phase: :loaded_before_start
  test "ecto.load brings back the definitions, unbuilt, the paused one too" do
    {:ok, _} = Application.ensure_all_started(:trellis_pg)
    trellis = Trellis.connect!(url: System.fetch_env!("DATABASE_URL"))

    try do
      for name <- ["widget_prices", "gadget_labels"] do
        assert %Trellis.Status{status: :waiting_to_backfill} = Trellis.status!(trellis, name)
      end
    after
      Trellis.shutdown(trellis)
    end
  end

  @tag phase: :loaded
  test "after ecto.drop, ecto.create and ecto.load the started app rebuilds every target" do
    assert definitions() == %{
             "widget_prices" => @widget_prices,
             "gadget_labels" => @gadget_labels
           }

    # Paused when it was dumped; the pause is runtime state and stays behind.
    refute status("gadget_labels").paused_kind

    write_widgets()
    Repo.insert_all(Gadget, [%{label: "bolt"}, %{label: "Nut"}])

    await_live("widget_prices")
    await_live("gadget_labels")
    assert_widget_prices_equal()

    assert rows("SELECT label FROM gadget_labels ORDER BY label") ==
             rows("SELECT upper(label) FROM gadgets ORDER BY 1")

    # mix ecto.dump's pg_dump drops grants (--no-acl); the definitions put
    # widget_prices' grant back.
    assert_only_the_reader_reads_widget_prices()
  end

  def forward_event(event, measurements, metadata, test),
    do: send(test, {event, measurements, metadata})

  defp write_widgets do
    Repo.insert_all(Widget, for(i <- 1..50, do: %{name: "w#{i}", price: rem(i, 7) - 1}))
    Repo.update_all(Widget |> where([w], w.price == 2), inc: [price: 10])
    Repo.delete_all(Widget |> where([w], w.price == 3))
    {:ok, _} = Repo.insert(%Widget{name: "late", price: 99})
  end

  defp assert_widget_prices_equal do
    token = Trellis.watermark_token!(EctoApp.Trellis)
    :ok = Trellis.await_converged!(EctoApp.Trellis, token, timeout_ms: 60_000)

    expected = rows("SELECT name, price FROM widgets WHERE price > 0 ORDER BY name")
    assert length(expected) > 10
    assert rows("SELECT name, price FROM widget_prices ORDER BY name") == expected
  end

  # The GRANT SELECT TO role reads the target; a role it does not name cannot.
  defp assert_only_the_reader_reads_widget_prices do
    expected = rows("SELECT count(*) FROM widget_prices")
    assert rows_as("ecto_app_reader", "SELECT count(*) FROM widget_prices") == {:ok, expected}

    assert {:error, %Postgrex.Error{postgres: %{code: :insufficient_privilege}}} =
             rows_as("pg_monitor", "SELECT count(*) FROM widget_prices")
  end

  defp rows_as(role, sql) do
    Repo.transaction(fn ->
      Repo.query!("SET LOCAL ROLE #{role}")

      case Repo.query(sql) do
        {:ok, %{rows: rows}} -> rows
        {:error, error} -> Repo.rollback(error)
      end
    end)
  end

  defp definitions do
    for d <- Trellis.definitions!(EctoApp.Trellis), into: %{}, do: {d.name, d.statement}
  end

  defp status(name), do: Trellis.status!(EctoApp.Trellis, name)

  defp await_live(name), do: wait_until(fn -> status(name).status == :live end)

  defp table?(name) do
    rows("SELECT 1 FROM pg_class WHERE relname = $1 AND relkind = 'r'", [name]) != []
  end

  defp migrated_versions do
    "SELECT version FROM schema_migrations ORDER BY version" |> rows() |> List.flatten()
  end

  defp pg_dump_waiting? do
    rows(
      "SELECT 1 FROM pg_stat_activity WHERE application_name = 'pg_dump' AND wait_event_type = 'Lock'"
    ) != []
  end

  defp rows(sql, params \\ []), do: Repo.query!(sql, params).rows

  defp wait_until(fun, deadline_ms \\ 60_000) do
    cond do
      fun.() ->
        :ok

      deadline_ms <= 0 ->
        flunk("condition not met within 60 s")

      true ->
        Process.sleep(100)
        wait_until(fun, deadline_ms - 100)
    end
  end
end
