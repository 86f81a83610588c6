defmodule Trellis.GuideExamplesTest do
  # The code examples of the user guide (the seed guide of trellis_pg, read
  # "NIF" as "port program"), run as written against the testkit. Only what
  # the guide itself leaves to the reader is adapted: the database URL (the
  # guide's "postgres://localhost/app" is the testkit's database here), the
  # widgets table the examples assume, and the host app's own children
  # (MyApp.Repo, MyAppWeb.Endpoint), which are not Trellis's. Lines that
  # cannot run as written are listed in Trellis's moduledoc, "Where this
  # package differs from the guide", with the reason.
  use ExUnit.Case, async: false

  alias Trellis.Test.{Database, SimplePG}

  @moduletag :port
  @moduletag :capture_log
  @moduletag timeout: 120_000

  setup do
    %{url: url, pg: pg} = Database.open!("guide")
    SimplePG.query!(pg, "CREATE TABLE widgets (id int PRIMARY KEY, price numeric)")
    %{url: url, pg: pg}
  end

  test "Usage: the migration step, the app, shutdown", %{url: url, pg: pg} do
    # A deploy's migration step: the defaults run nothing in the background.
    {:ok, migrator} = Trellis.connect(url: url)
    :ok = Trellis.migrate(migrator)
    :ok = Trellis.shutdown(migrator)

    # The app, once migrated.
    {:ok, trellis} = Trellis.connect(url: url, staging: true, drain_threads: 2)

    {:ok, _definition} =
      Trellis.define(trellis, "TRANSFORM widget_prices FROM widgets SELECT price AS price")

    # As written: over a table with no rows the first build is done when
    # define/2 returns (over one with rows it runs in the background; see
    # the moduledoc's differences).
    {:ok, %Trellis.Status{status: :live}} = Trellis.status(trellis, "widget_prices")

    # Conventions: the error shape, and no atom built from a database string.
    {:error, %Trellis.Error{code: code, message: message}} = Trellis.status(trellis, "nope")
    assert code == :not_found and is_binary(message)

    # The process-wide metrics registry needs no handle.
    SimplePG.query!(pg, "INSERT INTO widgets VALUES (1, 9.5)")
    :ok = Trellis.await_converged(trellis, Trellis.watermark_token!(trellis))
    :ok = Trellis.Metrics.flush(trellis)
    text = Trellis.Metrics.render_prometheus()
    assert text =~ ~s(trellis_instance="#{trellis.instance}")

    :ok = Trellis.shutdown(trellis)

    # "shutdown/1 doesn't wait for calls in flight: it cancels them, and each
    # of their callers gets a :validation error" - and so does a later call.
    assert {:error, %Trellis.Error{code: :validation}} = Trellis.status(trellis, "widget_prices")
  end

  test "In a Phoenix app: the supervised handle, by name", %{url: url} do
    {:ok, migrator} = Trellis.connect(url: url)
    :ok = Trellis.migrate(migrator)
    :ok = Trellis.shutdown(migrator)

    # config/runtime.exs
    database_url = url
    System.put_env("TRELLIS_WORKER", "true")

    Application.put_env(:my_app, MyApp.Trellis,
      name: MyApp.Trellis,
      url: database_url,
      # Only the fleet's one worker node runs the background work.
      staging: System.get_env("TRELLIS_WORKER") == "true",
      drain_threads: if(System.get_env("TRELLIS_WORKER") == "true", do: 2, else: 0)
    )

    # lib/my_app/application.ex (MyApp.Repo and MyAppWeb.Endpoint left out)
    children = [
      {Trellis, Application.fetch_env!(:my_app, MyApp.Trellis)}
    ]

    {:ok, supervisor} = Supervisor.start_link(children, strategy: :one_for_one)

    {:ok, {:transform_defined, "widget_prices"}} =
      Trellis.define(MyApp.Trellis, "TRANSFORM widget_prices FROM widgets SELECT price AS price")

    # Anywhere in the app: the name stands in for the handle.
    {:ok, status} = Trellis.status(MyApp.Trellis, "widget_prices")
    assert %Trellis.Status{name: "widget_prices"} = status

    # shutdown/1 refuses the name; the supervisor stops it.
    assert {:error, %Trellis.Error{code: :validation}} = Trellis.shutdown(MyApp.Trellis)
    :ok = Supervisor.stop(supervisor)

    assert {:error, %Trellis.Error{code: :validation}} =
             Trellis.status(MyApp.Trellis, "widget_prices")
  after
    System.delete_env("TRELLIS_WORKER")
    Application.delete_env(:my_app, MyApp.Trellis)
  end

  test "Fixtures and bulk loads in tests: TestSupport resumes what a trigger-less load disrupted",
       %{url: url, pg: pg} do
    migrator = Trellis.connect!(url: url)
    :ok = Trellis.migrate(migrator)
    :ok = Trellis.shutdown(migrator)
    trellis = Trellis.connect!(url: url, staging: true, drain_threads: 1)
    on_exit(fn -> Trellis.shutdown(trellis) end)

    {:transform_defined, _} =
      Trellis.define!(trellis, "TRANSFORM widget_prices FROM widgets SELECT price AS price")

    :ok = Trellis.await_converged(trellis, Trellis.watermark_token!(trellis))

    # ... load the fixtures with triggers disabled, then re-enabled ...
    SimplePG.query!(pg, """
    ALTER TABLE widgets DISABLE TRIGGER ALL;
    INSERT INTO widgets SELECT g, g FROM generate_series(1, 20) g;
    ALTER TABLE widgets ENABLE TRIGGER ALL;
    """)

    {:ok, _resumed} = Trellis.TestSupport.resume_capture_disruptions(trellis)

    assert SimplePG.scalar!(pg, "SELECT count(*) FROM widget_prices") == "20"
    {:ok, %Trellis.Status{status: :live}} = Trellis.status(trellis, "widget_prices")
  end
end
