defmodule Trellis.Observability.AlertRulesTest do
  # The shipped alerting rules and dashboard (observability/), tested on
  # series the real port produced: a scenario drives transforms into each
  # trouble the rules name (a pause, a drain failure, a held key, a capture
  # disruption, a self-check that diverges, lag), scrapes
  # Trellis.Metrics.render_prometheus/0 at three instants, writes the scraped
  # samples as the input series of a promtool unit test, and runs
  # `promtool test rules` on it.
  use ExUnit.Case, async: true

  import Trellis.Test.Eventually, only: [eventually: 2]

  alias Trellis.Test.{Database, JSON, SimplePG}

  @moduletag :port
  @moduletag :capture_log
  @moduletag timeout: 600_000

  @observability Path.expand("../../../observability", __DIR__)
  @rules Path.join(@observability, "trellis-alerts.yml")
  @dashboard Path.join(@observability, "trellis-dashboard.json")

  # The lag the shipped TrellisTransformLagging rule alerts past.
  @lag_limit_s 60

  @transforms ~w(fine_copy held_copy failing_copy paused_copy disrupted_copy checked_copy)

  defp promtool! do
    System.find_executable("promtool") ||
      flunk("promtool is needed: install Debian's prometheus package (scripts/setup.sh does)")
  end

  ## Scrapes

  # The samples of `instance` in the render, as %{series text => value text},
  # the series written as the exposition writes it (a valid PromQL selector).
  defp scrape(trellis) do
    :ok = Trellis.Metrics.flush(trellis)
    label = ~s(trellis_instance="#{trellis.instance}")

    for line <- String.split(Trellis.Metrics.render_prometheus(), "\n"),
        line != "" and not String.starts_with?(line, "#"),
        [series, value] <- [String.split(line, " ")],
        String.contains?(series, label),
        into: %{},
        do: {series, value}
  end

  defp value(samples, name, labels) do
    key = "#{name}{#{labels}}"
    if v = samples[key], do: v |> Float.parse() |> elem(0)
  end

  defp labels(trellis, transform),
    do: ~s(trellis_instance="#{trellis.instance}",transform="#{transform}")

  defp gauge(samples, trellis, name, transform),
    do: value(samples, name, labels(trellis, transform))

  defp in_state?(samples, trellis, transform, state),
    do:
      value(
        samples,
        "trellis_transform_status",
        labels(trellis, transform) <> ~s(,status="#{state}")
      ) == 1

  # Scrapes until `ready?` holds for a scrape, which it returns.
  defp scrape_when(trellis, ready?, tries \\ 1500) do
    me = self()

    ok =
      eventually(
        fn ->
          samples = scrape(trellis)
          ready?.(samples) && send(me, {:scraped, samples})
        end,
        tries
      )

    assert ok, "the scrape never showed what the test waits for:\n" <> inspect(scrape(trellis))
    assert_received {:scraped, samples}
    samples
  end

  describe "on a scenario through the real port" do
    setup do
      %{owner: owner, admin: admin} = db = Database.open_owned!("alerts")

      for source <- ~w(fine held failing paused_src disrupted checked) do
        SimplePG.query!(owner, """
        CREATE TABLE #{source} (id int PRIMARY KEY, v int NOT NULL);
        INSERT INTO #{source} SELECT g, g FROM generate_series(1, 100) g;
        """)
      end

      :ok = Trellis.migrate(Trellis.connect!(url: db.owner_url))
      trellis = Trellis.connect!(url: db.owner_url, staging: true, drain_threads: 2)
      on_exit(fn -> Trellis.shutdown(trellis) end)

      for {target, source} <-
            Enum.zip(@transforms, ~w(fine held failing paused_src disrupted checked)) do
        {:ok, _} = Trellis.define(trellis, "TRANSFORM #{target} FROM #{source} SELECT v AS v")
      end

      :ok =
        Trellis.await_converged(trellis, Trellis.watermark_token!(trellis), timeout_ms: 60_000)

      %{db: db, owner: owner, admin: admin, trellis: trellis}
    end

    test "the rules fire on the series the port exports, and only then", ctx do
      %{trellis: trellis, owner: owner, admin: admin, db: db} = ctx

      # 1. All well: every transform live, and its failure counters already
      #    there at 0 (an increase() over a counter that first appears at 1
      #    misses that first failure).
      healthy =
        scrape_when(trellis, fn s ->
          Enum.all?(@transforms, &in_state?(s, trellis, &1, "live")) and
            Enum.all?(@transforms, &gauge(s, trellis, "trellis_drain_failures_total", &1))
        end)

      for transform <- @transforms,
          counter <- ~w(trellis_drain_failures_total trellis_held_keys_total
                      trellis_quarantined_columns_total trellis_quarantined_rows_total) do
        assert gauge(healthy, trellis, counter, transform) == 0, "#{counter} of #{transform}"
        assert gauge(healthy, trellis, "trellis_transform_lag_seconds", transform) == 0
      end

      assert value(
               healthy,
               "trellis_drain_pages_failed_total",
               ~s(trellis_instance="#{trellis.instance}")
             ) == 0

      # 2. Trouble, one kind per transform. The pause first: its lag is what
      #    the last scrape waits for.
      {:ok, :paused} = Trellis.apply(trellis, "PAUSE TRANSFORM paused_copy")
      SimplePG.query!(owner, "UPDATE paused_src SET v = v + 1 WHERE id <= 3")
      # A key the target refuses whatever its values: held.
      SimplePG.query!(
        owner,
        "ALTER TABLE held_copy ADD CONSTRAINT no_13 CHECK (id <> 13) NOT VALID"
      )

      SimplePG.query!(owner, "UPDATE held SET v = v + 100 WHERE id BETWEEN 10 AND 16")
      # A privilege revoked on the target: a drain failure, charged to nothing.
      SimplePG.query!(admin, "REVOKE INSERT, UPDATE, DELETE ON failing_copy FROM #{db.role}")
      SimplePG.query!(owner, "UPDATE failing SET v = v + 1 WHERE id <= 10")
      # Capture switched off and on again outside Trellis: a disruption.
      SimplePG.query!(admin, "ALTER TABLE disrupted DISABLE TRIGGER ALL")
      SimplePG.query!(admin, "ALTER TABLE disrupted ENABLE TRIGGER ALL")
      {:ok, ["public.disrupted"]} = Trellis.detect_capture_disruptions(trellis)
      # A target row written by hand: the self-check finds it.
      SimplePG.query!(owner, "UPDATE checked_copy SET v = -1 WHERE id = 1")
      {:ok, job} = Trellis.self_check(trellis, "checked_copy")

      assert eventually(fn -> Trellis.self_check_job!(trellis, job.id).state == :done end, 3000)
      assert Trellis.self_check_job!(trellis, job.id).report.outcome == :diverged

      troubled =
        scrape_when(trellis, fn s ->
          in_state?(s, trellis, "paused_copy", "paused") and
            in_state?(s, trellis, "disrupted_copy", "paused") and
            gauge(s, trellis, "trellis_transform_capture_disrupted", "disrupted_copy") == 1 and
            gauge(s, trellis, "trellis_transform_drain_failure", "failing_copy") == 1 and
            gauge(s, trellis, "trellis_transform_held_keys", "held_copy") == 1 and
            gauge(s, trellis, "trellis_transform_self_check_divergences", "checked_copy") == 1 and
            gauge(s, trellis, "trellis_drain_failures_total", "failing_copy") >= 1 and
            gauge(s, trellis, "trellis_held_keys_total", "held_copy") >= 1
        end)

      assert gauge(troubled, trellis, "trellis_transform_lag_seconds", "paused_copy") > 0
      assert in_state?(troubled, trellis, "fine_copy", "live")

      # 3. Later: the paused transform's oldest waiting write is past the limit.
      later =
        scrape_when(
          trellis,
          fn s ->
            gauge(s, trellis, "trellis_transform_lag_seconds", "paused_copy") > @lag_limit_s + 1
          end,
          6000
        )

      # Minutes of the rules' time per scrape: a scrape stands for the state
      # the port reported at that instant, held long enough for each rule's
      # `for:` to pass.
      timeline = [{healthy, 10}, {troubled, 5}, {later, 15}]
      dir = Path.join(System.tmp_dir!(), "trellis-rules-#{System.unique_integer([:positive])}")
      File.mkdir_p!(dir)
      on_exit(fn -> File.rm_rf!(dir) end)

      File.write!(Path.join(dir, "rules.yml"), rules_without_annotations())

      File.write!(
        Path.join(dir, "test.yml"),
        promtool_test(timeline, expected_alerts(trellis, healthy, troubled, later))
      )

      {output, status} =
        System.cmd(promtool!(), ["test", "rules", "test.yml"], cd: dir, stderr_to_stdout: true)

      assert status == 0, output <> "\n" <> File.read!(Path.join(dir, "test.yml"))

      # A dropped transform's reports go from the render; its counters stay.
      {:ok, :paused} = Trellis.apply(trellis, "PAUSE TRANSFORM fine_copy")
      {:ok, _} = Trellis.apply(trellis, "DROP TRANSFORM fine_copy")

      gone =
        scrape_when(trellis, fn s ->
          gauge(s, trellis, "trellis_transform_lag_seconds", "fine_copy") == nil
        end)

      refute Enum.any?(Map.keys(gone), &(&1 =~ ~s(transform="fine_copy",status=)))
      assert gauge(gone, trellis, "trellis_drain_failures_total", "fine_copy") == 0
    end
  end

  # What each rule must say at three instants of the timeline, from what
  # the scenario did (and, for lag and the counters, from the scraped values
  # the rule reads).
  defp expected_alerts(trellis, healthy, troubled, later) do
    instance = trellis.instance

    alert = fn transform, severity ->
      %{"trellis_instance" => instance, "transform" => transform, "severity" => severity}
    end

    lagging =
      for t <- @transforms,
          (gauge(later, trellis, "trellis_transform_lag_seconds", t) || 0) > @lag_limit_s,
          do: t

    assert "paused_copy" in lagging

    rose = fn counter ->
      for t <- @transforms,
          gauge(troubled, trellis, counter, t) > gauge(healthy, trellis, counter, t),
          do: t
    end

    assert "failing_copy" in rose.("trellis_drain_failures_total")
    assert "held_copy" in rose.("trellis_held_keys_total")

    all = ~w(TrellisTransformPaused TrellisDrainFailureOpen TrellisDrainFailuresRecorded
             TrellisTransformLagging TrellisCaptureDisrupted TrellisHeldKeysGrowing
             TrellisSelfCheckDiverged TrellisStagingNotElected)

    # Minute 5: all well, nothing fires.
    quiet = for name <- all, do: {"5m", name, []}

    # Minute 12: two minutes into the trouble, the counters have risen.
    counters = [
      {"12m", "TrellisDrainFailuresRecorded",
       for(t <- rose.("trellis_drain_failures_total"), do: alert.(t, "warning"))},
      {"12m", "TrellisHeldKeysGrowing",
       for(t <- rose.("trellis_held_keys_total"), do: alert.(t, "warning"))}
    ]

    # Minute 25: ten minutes of the last scrape, so every `for:` has passed
    # and the counters no longer rise.
    states = [
      {"25m", "TrellisTransformPaused",
       [alert.("disrupted_copy", "critical"), alert.("paused_copy", "critical")]},
      {"25m", "TrellisDrainFailureOpen", [alert.("failing_copy", "critical")]},
      {"25m", "TrellisTransformLagging", for(t <- lagging, do: alert.(t, "warning"))},
      {"25m", "TrellisCaptureDisrupted", [alert.("disrupted_copy", "critical")]},
      {"25m", "TrellisSelfCheckDiverged", [alert.("checked_copy", "critical")]},
      {"25m", "TrellisDrainFailuresRecorded", []},
      {"25m", "TrellisHeldKeysGrowing", []},
      {"25m", "TrellisStagingNotElected", []}
    ]

    quiet ++ counters ++ states
  end

  # promtool compares annotations exactly, and they are templates over the
  # value ($value | humanize): the copy the unit test loads leaves them out.
  # `promtool check rules` checks them in the shipped file (the test below).
  defp rules_without_annotations do
    {lines, _skipping} =
      @rules
      |> File.read!()
      |> String.split("\n")
      |> Enum.flat_map_reduce(false, fn line, skipping ->
        indent = byte_size(line) - byte_size(String.trim_leading(line))

        cond do
          String.trim(line) == "annotations:" -> {[], indent}
          skipping && (String.trim(line) == "" or indent > skipping) -> {[], skipping}
          true -> {[line], false}
        end
      end)

    Enum.join(lines, "\n")
  end

  defp promtool_test(timeline, expectations) do
    series =
      timeline
      |> Enum.flat_map(fn {samples, _} -> Map.keys(samples) end)
      |> Enum.uniq()
      |> Enum.sort()

    input =
      for name <- series do
        values =
          Enum.flat_map(timeline, fn {samples, minutes} ->
            List.duplicate(Map.get(samples, name, "_"), minutes)
          end)

        "      - series: '#{name}'\n        values: '#{Enum.join(values, " ")}'\n"
      end

    tests =
      for {at, name, alerts} <- expectations do
        expected =
          for labels <- alerts do
            pairs =
              labels |> Enum.sort() |> Enum.map_join(", ", fn {k, v} -> ~s(#{k}: "#{v}") end)

            "          - exp_labels: {#{pairs}}\n"
          end

        "      - eval_time: #{at}\n        alertname: #{name}\n        exp_alerts:" <>
          if(expected == [], do: " []\n", else: "\n" <> Enum.join(expected))
      end

    """
    rule_files: [rules.yml]
    evaluation_interval: 1m
    tests:
      - interval: 1m
        input_series:
    #{Enum.join(input)}    alert_rule_test:
    #{Enum.join(tests)}
    """
  end

  test "the shipped rules pass promtool check rules, annotations included" do
    {output, status} = System.cmd(promtool!(), ["check", "rules", @rules], stderr_to_stdout: true)
    assert status == 0, output
    assert output =~ "SUCCESS: 8 rules found"
  end

  test "the dashboard and the rules read only series the port exports" do
    trellis = Trellis.Test.Handles.connect!(Application.get_env(:trellis_pg, :test_url))
    # Every family the port registers, with or without series yet.
    {:ok, %{"families" => families}} = Trellis.Call.call(trellis, "metrics", %{})

    exported =
      Enum.flat_map(families, fn
        %{"name" => name, "type" => "histogram"} ->
          [name <> "_bucket", name <> "_sum", name <> "_count"]

        %{"name" => name} ->
          [name]
      end)
      |> MapSet.new()

    dashboard = @dashboard |> File.read!() |> JSON.decode!()

    assert %{"title" => "Trellis", "uid" => "trellis-pg", "panels" => [_ | _] = panels} =
             dashboard

    exprs = for panel <- panels, target <- Map.get(panel, "targets", []), do: target["expr"]

    assert length(exprs) > 20

    for panel <- panels,
        panel["type"] != "row",
        do: assert(panel["targets"] != [], panel["title"])

    variables = for v <- dashboard["templating"]["list"], q = v["definition"], do: q

    rules =
      Regex.scan(~r/expr: (.*)/, File.read!(@rules), capture: :all_but_first) |> List.flatten()

    for text <- exprs ++ variables ++ rules,
        [name] <- Regex.scan(~r/\btrellis_[a-z_]+\b/, text),
        # a label name, not a metric
        name != "trellis_instance" do
      assert name in exported, "#{name} (in #{text}) is not a series the port exports"
    end
  end
end
