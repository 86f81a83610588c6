defmodule Trellis.MetricsTest do
  # Trellis.Metrics: one registry in the VM, fed by the ports' `metrics`
  # events. Not async: a render covers every handle of the VM, so other
  # tests' handles would come and go in the middle of these.
  use ExUnit.Case, async: false

  import Trellis.Test.Handles, only: [connect!: 2]

  alias Trellis.Metrics
  alias Trellis.Metrics.Store

  setup do
    %{url: Application.get_env(:trellis_pg, :test_url)}
  end

  # The value of the sample `name{labels}` in `text` (labels written as in
  # the exposition, trellis_instance first); nil when absent.
  defp sample(text, name, labels) do
    prefix = "#{name}{#{labels}} "

    text
    |> String.split("\n")
    |> Enum.find_value(fn line ->
      if String.starts_with?(line, prefix), do: String.replace_prefix(line, prefix, "")
    end)
  end

  defp number(nil), do: 0
  defp number(text), do: text |> Float.parse() |> elem(0)

  defp pings(text, instance),
    do: number(sample(text, "trellis_calls_total", ~s(#{label(instance)},op="ping",result="ok")))

  defp label(instance), do: ~s(trellis_instance="#{instance}")

  # promtool checks the text when it is installed (scripts/setup.sh installs
  # it); under CI (Trellis.Test.CI) a missing promtool fails the test, since
  # the check would pass without running. The result is returned so each
  # scrape of a test can be checked.
  defp assert_promtool_accepts(text) do
    case System.find_executable("promtool") do
      nil ->
        if Trellis.Test.CI.ci?() do
          flunk(
            "promtool is not on PATH under CI (TRELLIS_CI=1), so the rendered metrics " <>
              "were not checked: install Debian's prometheus package (scripts/setup.sh does)"
          )
        end

        IO.puts(:stderr, "promtool not installed: the rendered text was not checked by it")

      promtool ->
        path =
          Path.join(System.tmp_dir!(), "trellis-metrics-#{System.unique_integer([:positive])}")

        File.write!(path, text)

        try do
          {output, status} =
            System.cmd("sh", ["-c", "#{promtool} check metrics < #{path}"], stderr_to_stdout: true)

          assert status == 0, output <> "\n" <> text
        after
          File.rm(path)
        end
    end

    text
  end

  defp scrape, do: assert_promtool_accepts(Metrics.render_prometheus())

  describe "through real ports" do
    @describetag :port

    test "two handles on two catalog schemas render as distinct instances, and counters move",
         %{url: url} do
      one = connect!(url, schema: "metrics_one", pool_size: 3)
      two = connect!(url, schema: "metrics_two", drain_threads: 1)
      assert one.instance != two.instance

      :ok = Metrics.flush(one)
      before = pings(scrape(), one.instance)

      for _ <- 1..3, do: :ok = Trellis.ping(one)
      :ok = Metrics.flush(one)
      :ok = Metrics.flush(two)
      text = scrape()

      assert pings(text, one.instance) == before + 3

      assert sample(text, "trellis_calls_total", ~s(#{label(two.instance)},op="ping",result="ok")) ==
               nil

      assert sample(text, "trellis_pool_connections_max", label(one.instance)) == "3"
      assert sample(text, "trellis_pool_connections_max", label(two.instance)) == "10"

      assert sample(text, "trellis_workers", ~s(#{label(two.instance)},role="drain")) in [
               "0",
               "1"
             ]

      assert sample(text, "trellis_staging_elected", label(one.instance)) == "0"

      count =
        sample(text, "trellis_call_duration_seconds_count", ~s(#{label(one.instance)},op="ping"))

      assert number(count) >= 3

      assert sample(
               text,
               "trellis_call_duration_seconds_bucket",
               ~s(#{label(one.instance)},op="ping",le="+Inf")
             ) == count

      # Each family's HELP and TYPE appear once, however many handles.
      for family <- ["trellis_calls_total", "trellis_workers", "trellis_call_duration_seconds"] do
        assert length(String.split(text, "# TYPE #{family} ")) == 2
        assert length(String.split(text, "# HELP #{family} ")) == 2
      end

      # Every sample names its instance.
      for line <- String.split(text, "\n", trim: true), not String.starts_with?(line, "#") do
        assert line =~ ~r/^[a-z_]+\{trellis_instance="[^"]+"/
      end
    end

    test "changes arrive without a flush, within the push interval", %{url: url} do
      handle = connect!(url, schema: "metrics_pushed")
      :ok = Metrics.flush(handle)
      before = pings(scrape(), handle.instance)
      :ok = Trellis.ping(handle)
      Process.sleep(Metrics.push_interval_ms() * 3)
      assert pings(scrape(), handle.instance) == before + 1
    end

    @tag timeout: 120_000
    test "the background workers' series count a real workload" do
      url = Trellis.Test.Database.create!("metrics_work")
      pg = Trellis.Test.SimplePG.connect!(url)
      on_exit(fn -> Trellis.Test.SimplePG.close(pg) end)

      Trellis.Test.SimplePG.query!(pg, """
      CREATE TABLE widgets (id int PRIMARY KEY, price numeric);
      INSERT INTO widgets SELECT g, g FROM generate_series(1, 200) g;
      """)

      migrator = connect!(url, [])
      :ok = Trellis.migrate(migrator)
      trellis = connect!(url, staging: true, drain_threads: 2)
      {:ok, _} = Trellis.define(trellis, "TRANSFORM widget_prices FROM widgets SELECT price AS p")

      # Built first: a write staged before the build starts makes no page
      # (the build reads it), so the update would reach no drain.
      :ok =
        Trellis.await_converged(trellis, Trellis.watermark_token!(trellis), timeout_ms: 60_000)

      Trellis.Test.SimplePG.query!(pg, "UPDATE widgets SET price = price + 1 WHERE id <= 50")

      :ok =
        Trellis.await_converged(trellis, Trellis.watermark_token!(trellis), timeout_ms: 60_000)

      :ok = Metrics.flush(trellis)

      text = scrape()
      label = label(trellis.instance)
      assert number(sample(text, "trellis_backfill_rows_total", label)) >= 200
      assert number(sample(text, "trellis_capture_rows_staged_total", label)) >= 1
      assert number(sample(text, "trellis_drain_pages_total", label)) >= 1
      assert number(sample(text, "trellis_drain_keys_total", label)) >= 50
      assert sample(text, "trellis_staging_elected", label) == "1"
      assert sample(text, "trellis_workers", ~s(#{label},role="staging")) == "1"
      assert sample(text, "trellis_workers", ~s(#{label},role="drain")) == "2"

      # The drained batch's path cost, once the handle has read the
      # transforms' reports, in a scrape promtool accepts (its name once
      # had "_us_", which promtool refuses).
      assert Trellis.Test.Eventually.eventually(fn ->
               :ok = Metrics.flush(trellis)
               scrape() =~ "trellis_transform_path_cost_seconds_per_row{"
             end)
    end

    @tag timeout: 120_000
    test "a drain whose target another transform reads hands its writes on: a stage's, a chain's, never a lone transform's" do
      url = Trellis.Test.Database.create!("metrics_stage_wakes")
      pg = Trellis.Test.SimplePG.connect!(url)
      on_exit(fn -> Trellis.Test.SimplePG.close(pg) end)

      Trellis.Test.SimplePG.query!(pg, """
      CREATE TABLE customers (id int PRIMARY KEY, tier text);
      CREATE TABLE orders (id int PRIMARY KEY, buyer_id int, amount numeric);
      CREATE TABLE widgets (id int PRIMARY KEY, price numeric);
      CREATE TABLE gadgets (id int PRIMARY KEY, price numeric);
      INSERT INTO customers SELECT g, 't' || (g % 3) FROM generate_series(1, 20) g;
      INSERT INTO widgets SELECT g, g FROM generate_series(1, 20) g;
      """)

      # Defined before the workers start (a drain's claim asks whether others
      # read its target, so defining them later would do as well).
      definer = connect!(url, [])
      :ok = Trellis.migrate(definer)
      {:ok, _} = Trellis.define(definer, "TRANSFORM widget_prices FROM widgets SELECT price AS p")

      {:ok, _} =
        Trellis.define(
          definer,
          "TRANSFORM tier_totals FROM orders o JOIN customers c ON o.buyer_id = c.id " <>
            "SELECT c.tier, count(*) AS n, sum(o.amount) AS total GROUP BY c.tier"
        )

      {:ok, _} = Trellis.define(definer, "TRANSFORM gadget_prices FROM gadgets SELECT price AS p")

      {:ok, _} =
        Trellis.define(definer, "TRANSFORM gadget_count FROM gadget_prices SELECT count(*) AS n")

      trellis = connect!(url, staging: true, drain_threads: 1)

      converge = fn ->
        :ok = Trellis.await_converged(trellis, Trellis.watermark_token!(trellis))
      end

      wakes = fn -> Trellis.Test.Counters.handoffs(trellis) end

      converge.()
      before = wakes.()
      # A lone projection: nothing reads its target.
      Trellis.Test.SimplePG.query!(pg, "UPDATE widgets SET price = price + 1 WHERE id <= 10")
      converge.()
      assert wakes.() == before

      # The grouped join's first stage (its hidden join) drains, then hands
      # its writes on for the group.
      Trellis.Test.SimplePG.query!(
        pg,
        "INSERT INTO orders SELECT g, g % 20 + 1, g FROM generate_series(1, 50) g"
      )

      converge.()
      after_stage = wakes.()
      assert after_stage > before

      assert Trellis.Test.SimplePG.scalar!(pg, "SELECT sum(total)::bigint FROM tier_totals") ==
               Integer.to_string(div(50 * 51, 2))

      # A chain: gadget_prices' drain hands its writes on for gadget_count.
      Trellis.Test.SimplePG.query!(
        pg,
        "INSERT INTO gadgets SELECT g, g FROM generate_series(1, 5) g"
      )

      converge.()
      assert wakes.() > after_stage
      assert Trellis.Test.SimplePG.scalar!(pg, "SELECT n::text FROM gadget_count") == "5"
    end

    @tag timeout: 120_000
    test "the self-check divergences gauge keeps its count while a newer check waits to run" do
      url = Trellis.Test.Database.create!("metrics_check_gauge")
      pg = Trellis.Test.SimplePG.connect!(url)
      on_exit(fn -> Trellis.Test.SimplePG.close(pg) end)

      Trellis.Test.SimplePG.query!(pg, """
      CREATE TABLE widgets (id int PRIMARY KEY, price numeric);
      INSERT INTO widgets SELECT g, g FROM generate_series(1, 20) g;
      """)

      # The reporter publishes the transform reports (its staging worker is
      # elected) and runs no check: with the checker gone, a check waits.
      :ok = Trellis.migrate(connect!(url, []))
      reporter = connect!(url, staging: true, drain_threads: 0)

      {:ok, _} =
        Trellis.define(reporter, "TRANSFORM widget_prices FROM widgets SELECT price AS p")

      series = ~s(#{label(reporter.instance)},transform="widget_prices")

      gauge = fn ->
        :ok = Metrics.flush(reporter)
        sample(scrape(), "trellis_transform_self_check_divergences", series)
      end

      Trellis.Test.Handles.with_handle(url, [drain_threads: 1], fn checker ->
        :ok = Trellis.await_converged(checker, Trellis.watermark_token!(checker))
        # A target row written by hand: the first check finds it.
        Trellis.Test.SimplePG.query!(pg, "UPDATE widget_prices SET p = -1 WHERE id = 1")
        {:ok, job} = Trellis.self_check(checker, "widget_prices")
        assert wait_for(fn -> Trellis.self_check_job!(checker, job.id).state == :done end)
      end)

      assert wait_for(fn -> gauge.() == "1" end)

      # A newer check replaces the finished job; no drain worker runs it.
      {:ok, newer} = Trellis.self_check(reporter, "widget_prices")
      assert newer.state == :queued
      # Two report rounds (every 5 s) later the series is still there.
      Process.sleep(11_000)
      assert gauge.() == "1"
      assert Trellis.self_check_job!(reporter, newer.id).state == :queued
    end

    defp wait_for(ready?, tries \\ 600) do
      cond do
        ready?.() -> true
        tries == 0 -> false
        true -> Process.sleep(50) && wait_for(ready?, tries - 1)
      end
    end

    test "a scrape during a port that is blocked returns at once, with its last values",
         %{url: url} do
      stuck = connect!(url, schema: "metrics_stuck")
      :ok = Trellis.ping(stuck)
      :ok = Metrics.flush(stuck)
      {:os_pid, os_pid} = Port.info(stuck.port, :os_pid)
      # What a scrape costs on this machine now, with every port answering:
      # the comparison below is against it, not against a fixed time, so a
      # loaded machine does not fail the test.
      {baseline, _} = :timer.tc(&Metrics.render_prometheus/0)

      # A stopped process reads and writes nothing.
      {_, 0} = System.cmd("kill", ["-STOP", "#{os_pid}"])

      try do
        # Nothing waits on the port: a scrape that asked it would wait out
        # its 1 s budget on top of the scrape's own cost.
        {micros, text} = :timer.tc(&Metrics.render_prometheus/0)
        assert_promtool_accepts(text)

        assert micros < baseline + 900_000,
               "a scrape took #{micros} us with the port stopped, #{baseline} us without"

        assert pings(text, stuck.instance) >= 1
        assert sample(text, "trellis_pool_connections_max", label(stuck.instance)) == "10"
      after
        System.cmd("kill", ["-CONT", "#{os_pid}"])
      end
    end

    test "after a shutdown, the handle's counters stay and its gauges are gone", %{url: url} do
      {:ok, handle} = Trellis.connect(url: url, schema: "metrics_gone", pool_size: 4)
      for _ <- 1..2, do: :ok = Trellis.ping(handle)
      # No flush: the port pushes its last changes as it stops.
      :ok = Trellis.shutdown(handle)

      text = scrape()
      assert pings(text, handle.instance) == 2
      assert sample(text, "trellis_pool_connections_max", label(handle.instance)) == nil
      assert sample(text, "trellis_workers", ~s(#{label(handle.instance)},role="drain")) == nil
    end

    test "across a restart of a supervised handle, counters keep going up", %{url: url} do
      name = :"metrics_restart_#{System.unique_integer([:positive])}"

      {:ok, supervisor} =
        Supervisor.start_link([{Trellis, name: name, url: url, schema: "metrics_restart"}],
          strategy: :one_for_one
        )

      for _ <- 1..3, do: :ok = Trellis.ping(name)
      :ok = Metrics.flush(name)
      {:ok, %Trellis{} = first} = Trellis.resolve(name)
      instance = first.instance
      assert pings(scrape(), instance) == 3

      # The port program dies; the supervisor starts a new owner and port,
      # whose own registry starts from zero.
      {:os_pid, os_pid} = Port.info(first.port, :os_pid)
      {_, 0} = System.cmd("kill", ["-KILL", "#{os_pid}"])

      restarted =
        Enum.find_value(1..100, fn _ ->
          with {:ok, %Trellis{} = h} <- Trellis.resolve(name),
               true <- h.owner != first.owner and Process.alive?(h.owner) do
            h
          else
            _ -> Process.sleep(50) && nil
          end
        end)

      assert restarted, "the supervisor did not restart the handle"
      # Gauges of the dead handle went with it; the new one reports its own.
      :ok = Trellis.ping(name)
      :ok = Metrics.flush(name)
      text = scrape()
      assert pings(text, instance) == 4
      assert sample(text, "trellis_pool_connections_max", label(instance)) == "10"
      Supervisor.stop(supervisor)
    end
  end

  describe "the registry (no port)" do
    defp family(name, type, labels, series, extra \\ %{}) do
      Map.merge(
        %{
          "name" => name,
          "type" => type,
          "help" => "help of #{name}",
          "labels" => labels,
          "series" => series
        },
        extra
      )
    end

    defp latency(count, counts, sum) do
      family(
        "trellis_test_duration_seconds",
        "histogram",
        ["op"],
        [%{"labels" => ["a\"b\\c\nd"], "counts" => counts, "sum" => sum, "count" => count}],
        %{"buckets" => [0.001, 2.5]}
      )
    end

    test "changes add up per instance; gauges per handle, gone with it; labels escaped" do
      instance = "registry_#{System.unique_integer([:positive])}/trellis"
      one = spawn(fn -> Process.sleep(:infinity) end)
      two = spawn(fn -> Process.sleep(:infinity) end)
      Store.watch(one)
      Store.watch(two)

      calls = fn n ->
        family("trellis_test_calls_total", "counter", ["op", "result"], [
          %{"labels" => ["ping", "ok"], "value" => n}
        ])
      end

      gauge = fn n ->
        family("trellis_test_open", "gauge", [], [%{"labels" => [], "value" => n}])
      end

      Store.apply_changes(instance, one, %{
        "families" => [calls.(2), latency(3, [1, 3], 0.25), gauge.(5)]
      })

      Store.apply_changes(instance, two, %{
        "families" => [calls.(5), latency(4, [2, 2], 0.5), gauge.(1)]
      })

      # A gauge is a value, not a change: the newer replaces the older.
      Store.apply_changes(instance, one, %{"families" => [gauge.(4)]})

      text = assert_promtool_accepts(Metrics.render_prometheus())
      l = label(instance)
      escaped = ~S(op="a\"b\\c\nd")
      assert text =~ ~s(trellis_test_calls_total{#{l},op="ping",result="ok"} 7\n)
      assert text =~ ~s(trellis_test_duration_seconds_bucket{#{l},#{escaped},le="0.001"} 3\n)
      assert text =~ ~s(trellis_test_duration_seconds_bucket{#{l},#{escaped},le="2.5"} 5\n)
      assert text =~ ~s(trellis_test_duration_seconds_bucket{#{l},#{escaped},le="+Inf"} 7\n)
      assert text =~ ~s(trellis_test_duration_seconds_sum{#{l},#{escaped}} 0.75\n)
      assert text =~ ~s(trellis_test_open{#{l}} 5\n)

      # One handle dies (unannounced): its gauge goes, the counters stay.
      Process.exit(one, :kill)

      assert Enum.any?(1..50, fn _ ->
               Metrics.render_prometheus() =~ ~s(trellis_test_open{#{l}} 1\n) ||
                 (Process.sleep(10) && false)
             end)

      assert Metrics.render_prometheus() =~
               ~s(trellis_test_calls_total{#{l},op="ping",result="ok"} 7\n)

      Process.exit(two, :kill)
    end

    test "a gauge series sent as nil goes from the render; the others stay" do
      instance = "registry_gone_#{System.unique_integer([:positive])}/trellis"
      owner = spawn(fn -> Process.sleep(:infinity) end)

      lag = fn series ->
        family("trellis_test_lag_seconds", "gauge", ["transform"], series)
      end

      Store.apply_changes(instance, owner, %{
        "families" => [
          lag.([%{"labels" => ["a"], "value" => 1.5}, %{"labels" => ["b"], "value" => 2}])
        ]
      })

      l = label(instance)
      assert Metrics.render_prometheus() =~ ~s(trellis_test_lag_seconds{#{l},transform="a"} 1.5\n)

      Store.apply_changes(instance, owner, %{
        "families" => [lag.([%{"labels" => ["a"], "value" => nil}])]
      })

      text = assert_promtool_accepts(Metrics.render_prometheus())
      refute text =~ ~s(transform="a")
      assert text =~ ~s(trellis_test_lag_seconds{#{l},transform="b"} 2\n)
      Process.exit(owner, :kill)
    end

    test "malformed changes are skipped" do
      instance = "registry_bad/trellis"
      owner = self()

      Store.apply_changes(instance, owner, %{"families" => [%{"name" => 1}, "x"]})
      Store.apply_changes(instance, owner, :not_a_map)

      Store.apply_changes(instance, owner, %{
        "families" => [
          latency(1, [1], 0.1),
          family("trellis_test_bad", "counter", [], [%{"labels" => [], "value" => "x"}])
        ]
      })

      refute Metrics.render_prometheus() =~ "registry_bad"
      Store.drop_gauges(owner)
    end
  end
end
