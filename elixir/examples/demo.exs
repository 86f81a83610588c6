# The Trellis demo: run by scripts/demo.sh against a throwaway PostgreSQL.
#
# From Elixir, through the real trellis-port program, it defines three
# transforms over two tables of an app (a projection, a GROUP BY over a join,
# and a transform over that GROUP BY's target), then shows in turn:
#   1. the targets after their first build;
#   2. writes followed live, each with its measured freshness per target;
#   3. status/2 of each transform;
#   4. a bad row quarantined (one column of one row), then healed;
#   5. a self_check/3 job per transform finishing clean.
# The app's rows are written, and the targets read, with a small SQL client
# of the test support code (Trellis.Test.SimplePG), not through Trellis.

defmodule Demo do
  alias Trellis.Test.SimplePG

  # Each transform with the query it keeps its target equal to, written over
  # the base tables (the chain's composed with the GROUP BY's), the target's
  # key and value columns: what the freshness probe compares.
  @definition_over_orders """
  SELECT id, customer_id, amount, round(amount / qty, 2) AS unit_price
    FROM orders WHERE amount >= 10
  """
  @definition_totals """
  SELECT c.name AS customer, count(*) AS order_count, sum(o.amount) AS total,
         avg(o.amount) AS average
    FROM orders o JOIN customers c ON o.customer_id = c.id GROUP BY c.name
  """
  @transforms [
    %{
      name: "big_orders",
      kind: "projection",
      statement: """
      TRANSFORM big_orders FROM orders
        SELECT customer_id AS customer_id, amount AS amount, round(amount / qty, 2) AS unit_price
        WHERE amount >= 10\
      """,
      key: ["id"],
      values: ["customer_id", "amount", "unit_price"],
      definition: @definition_over_orders
    },
    %{
      name: "customer_totals",
      kind: "GROUP BY over a join",
      statement: """
      TRANSFORM customer_totals FROM orders o JOIN customers c ON o.customer_id = c.id
        SELECT c.name AS customer, count(*) AS order_count, sum(o.amount) AS total,
               avg(o.amount) AS average
        GROUP BY c.name\
      """,
      key: ["customer"],
      values: ["order_count", "total", "average"],
      definition: @definition_totals
    },
    %{
      name: "customer_tiers",
      kind: "chain: a transform over customer_totals",
      statement: """
      TRANSFORM customer_tiers FROM customer_totals
        SELECT customer AS customer, total AS total,
               CASE WHEN total >= 100 THEN 'gold' ELSE 'standard' END AS tier\
      """,
      key: ["customer"],
      values: ["total", "tier"],
      definition: """
      SELECT customer, total, CASE WHEN total >= 100 THEN 'gold' ELSE 'standard' END AS tier
        FROM (#{@definition_totals}) totals
      """
    }
  ]

  def run(url) do
    started = System.monotonic_time(:millisecond)
    pg = SimplePG.connect!(url)
    create_app_tables(pg)

    # A migration step, as a deploy would run it: nothing in the background.
    {:ok, migrator} = Trellis.connect(url: url)
    info = Trellis.server_info!(migrator)
    {major, minor} = info.protocol_version

    say("Trellis keeps derived tables inside your PostgreSQL up to date as writes commit.")

    say(
      "trellis-port #{info.engine_version} (protocol #{major}.#{minor}), " <>
        "PostgreSQL #{info.server_version}, instance #{info.instance}"
    )

    :ok = Trellis.migrate(migrator)
    :ok = Trellis.shutdown(migrator)

    # The app's handle: the instance's staging worker and two drain threads.
    {:ok, trellis} = Trellis.connect(url: url, staging: true, drain_threads: 2)

    define_all(trellis, pg)
    follow_writes(trellis, pg)
    show_status(trellis)
    quarantine_and_heal(trellis, pg)
    self_checks(trellis)

    :ok = Trellis.shutdown(trellis)
    SimplePG.close(pg)
    say("\nThe demo took #{ms_since(started)} ms.")
  end

  defp create_app_tables(pg) do
    SimplePG.query!(pg, """
    CREATE TABLE customers (id bigint PRIMARY KEY, name text NOT NULL);
    CREATE TABLE orders (id bigint PRIMARY KEY, customer_id bigint NOT NULL REFERENCES customers,
                         amount numeric(10, 2) NOT NULL, qty int NOT NULL);
    -- What a GROUP BY over a join looks its keys up by (status/2 would name it).
    CREATE INDEX ON orders (customer_id);
    INSERT INTO customers VALUES (1, 'alice'), (2, 'bob'), (3, 'carol');
    INSERT INTO orders VALUES (1, 1, 12.00, 1), (2, 1, 30.00, 3), (3, 2, 8.50, 1),
                              (4, 2, 45.00, 5), (5, 3, 60.00, 2), (6, 3, 15.00, 1);
    """)
  end

  ## 1. Define

  defp define_all(trellis, pg) do
    heading("1. Three transforms over the app's tables: customers (3 rows), orders (6 rows)")
    started = System.monotonic_time(:millisecond)

    for t <- @transforms do
      say("\n  #{t.kind}:\n#{indent(t.statement, 4)}")
      {:ok, {:transform_defined, _}} = Trellis.define(trellis, t.statement)
    end

    converge(trellis)
    Enum.each(@transforms, &await_live(trellis, &1.name))
    say("\n  Built from the rows already there, and :live, in #{ms_since(started)} ms:")
    show_targets(pg, @transforms)
  end

  ## 2. Writes followed live

  @writes [
    {"alice orders 60.00 (order 7)", "INSERT INTO orders VALUES (7, 1, 60.00, 4)"},
    {"order 3 repriced 8.50 -> 18.50", "UPDATE orders SET amount = 18.50 WHERE id = 3"},
    {"bob renamed robert (customers only)", "UPDATE customers SET name = 'robert' WHERE id = 2"},
    {"order 6 deleted", "DELETE FROM orders WHERE id = 6"},
    {"500 orders in one transaction",
     "INSERT INTO orders SELECT 100 + g, 1 + g % 3, 10 + g % 40, 1 + g % 4 " <>
       "FROM generate_series(1, 500) g"}
  ]

  defp follow_writes(trellis, pg) do
    heading("2. Writes, followed live")

    say("""
      Freshness: from the write's commit until the target equals its definition
      over the tables as they are now, probed in a loop ("-": the target did not change).
    """)

    names = Enum.map(@transforms, & &1.name)
    rows = for {what, sql} <- @writes, do: [what | measure_freshness(pg, sql)]
    table(["write" | names], rows)
    [load | _] = File.read!("/proc/loadavg") |> String.split()

    say("""
      (One probe of the three targets takes #{probe_ms(pg)} ms, the figures' resolution;
      measured at load average #{load} on #{System.schedulers_online()} cores.
      bench/README.md has figures from a quiet machine.)\
    """)

    converge(trellis)
    say("\n  The GROUP BY and the chain now:")
    show_targets(pg, tl(@transforms))
  end

  # Commits `sql`, then polls every target until it equals its definition,
  # and returns each target's freshness in ms ("-" when it was never behind).
  defp measure_freshness(pg, sql) do
    SimplePG.query!(pg, sql)
    committed = System.monotonic_time(:microsecond)
    probe = "SELECT " <> Enum.map_join(@transforms, ", ", &difference_sql/1)
    poll(pg, probe, committed, List.duplicate(nil, length(@transforms)), true)
  end

  defp poll(pg, probe, committed, seen, first?) do
    [counts] = SimplePG.query!(pg, probe)
    now = System.monotonic_time(:microsecond)

    seen =
      Enum.zip_with(seen, counts, fn
        nil, "0" -> if first?, do: "-", else: "#{Float.round((now - committed) / 1000, 1)} ms"
        earlier, _ -> earlier
      end)

    cond do
      Enum.all?(seen) ->
        seen

      now - committed > 30_000_000 ->
        raise "a target did not follow within 30 s"

      true ->
        Process.sleep(2)
        poll(pg, probe, committed, seen, false)
    end
  end

  # The median time of one probe: the resolution of the freshness figures.
  defp probe_ms(pg) do
    probe = "SELECT " <> Enum.map_join(@transforms, ", ", &difference_sql/1)

    times =
      for _ <- 1..5 do
        {us, _} = :timer.tc(fn -> SimplePG.query!(pg, probe) end)
        us
      end

    Float.round(Enum.at(Enum.sort(times), 2) / 1000, 1)
  end

  # How many rows of t's target differ from its definition (missing, extra
  # or with another value).
  defp difference_sql(t) do
    using = Enum.join(t.key, ", ")
    k = hd(t.key)
    t_values = Enum.map_join(t.values, ", ", &"t.#{&1}")
    d_values = Enum.map_join(t.values, ", ", &"d.#{&1}")

    """
    (SELECT count(*) FROM #{t.name} t FULL JOIN (#{t.definition}) d USING (#{using})
      WHERE t.#{k} IS NULL OR d.#{k} IS NULL OR (#{t_values}) IS DISTINCT FROM (#{d_values}))
    """
  end

  ## 3. status/2

  defp show_status(trellis) do
    heading("3. status/2 of each transform")

    rows =
      for t <- @transforms do
        s = Trellis.status!(trellis, t.name)
        paused = for c <- s.columns, c.state == :paused, do: "#{c.name} (#{c.paused_kind})"

        [
          s.name,
          to_string(s.status),
          "#{s.backlog_pages} pages",
          to_string(s.held_keys),
          if(paused == [], do: "none", else: Enum.join(paused, ", ")),
          if(s.source_index_gaps == [], do: "none", else: length(s.source_index_gaps)),
          time_of_day(s.last_applied_at)
        ]
      end

    table(
      [
        "transform",
        "status",
        "backlog",
        "held keys",
        "paused columns",
        "index gaps",
        "last applied"
      ],
      rows
    )
  end

  ## 4. Quarantine

  defp quarantine_and_heal(trellis, pg) do
    heading("4. A bad row: quarantined, then healed")
    SimplePG.query!(pg, "INSERT INTO orders VALUES (900, 1, 20.00, 0)")
    say("  wrote order 900 with qty 0: its unit_price (amount / qty) divides by zero")
    converge(trellis)

    [entry] = Trellis.quarantine_status!(trellis, "big_orders.unit_price")
    %{samples: [sample]} = Trellis.sample_quarantined!(trellis, "big_orders.unit_price")
    say("  quarantined/1: #{entry.target}, #{entry.rows} row(s), reason:")
    say(indent(wrap(entry.reason, 76), 4))
    say("  sample_quarantined/3, the failing row:")
    say("    key #{inspect(sample.key)}, inputs #{inspect(sample.inputs)}")
    say("    error #{sample.sqlstate}: #{sample.error}")
    say("  only that value is withheld; the row and every other row stay maintained:")

    show_rows(
      pg,
      "SELECT id, customer_id, amount, unit_price FROM big_orders WHERE id IN (7, 900)"
    )

    say("  status/2: #{status_line(trellis, "big_orders")}")

    SimplePG.query!(pg, "UPDATE orders SET qty = 4 WHERE id = 900")
    say("\n  fixed the row: UPDATE orders SET qty = 4 WHERE id = 900")
    started = System.monotonic_time(:millisecond)
    converge(trellis)

    # A fixing write heals its key once the engine does that; until then the
    # documented way is RESUME, which rebuilds the column and quarantines
    # again only rows that still fail.
    how =
      case Trellis.quarantine_status!(trellis, "big_orders.unit_price") do
        [] ->
          "the fixing write itself healed it (no RESUME needed)"

        [_] ->
          {:ok, {:resumed, _}} = Trellis.apply(trellis, "RESUME TRANSFORM big_orders.unit_price")
          converge(trellis)
          await_live(trellis, "big_orders")
          [] = Trellis.quarantine_status!(trellis, "big_orders.unit_price")

          "the write alone left it quarantined; RESUME TRANSFORM big_orders.unit_price " <>
            "rebuilt the column"
      end

    say("  healed in #{ms_since(started)} ms:\n#{indent(wrap(how, 76), 4)}")
    show_rows(pg, "SELECT id, customer_id, amount, unit_price FROM big_orders WHERE id = 900")
    say("  status/2: #{status_line(trellis, "big_orders")}")
  end

  defp status_line(trellis, name) do
    s = Trellis.status!(trellis, name)

    columns =
      Enum.map_join(s.columns, ", ", fn
        %{state: :paused} = c -> "#{c.name} paused (#{c.paused_kind})"
        c -> "#{c.name} #{c.state}"
      end)

    "#{s.status}; #{columns}"
  end

  defp await_live(trellis, name, tries \\ 500) do
    cond do
      Trellis.status!(trellis, name).status == :live -> :ok
      tries == 0 -> raise "#{name} did not become live"
      true -> Process.sleep(20) && await_live(trellis, name, tries - 1)
    end
  end

  ## 5. self_check/3

  defp self_checks(trellis) do
    heading("5. self_check/3: each target against a fresh recompute of its definition")

    rows =
      for t <- @transforms do
        started = System.monotonic_time(:millisecond)
        {:ok, job} = Trellis.self_check(trellis, t.name)
        job = await_job(trellis, job.id)
        report = job.report
        true = report.outcome == :clean

        [
          t.name,
          "job #{job.id}",
          to_string(job.state),
          to_string(report.outcome),
          "#{report.rows_compared} rows compared",
          "#{report.divergence_count} divergences",
          "#{ms_since(started)} ms"
        ]
      end

    table(["transform", "job", "state", "outcome", "compared", "found", "took"], rows)
  end

  defp await_job(trellis, id, tries \\ 1500) do
    job = Trellis.self_check_job!(trellis, id)

    cond do
      job.state in [:done, :failed, :cancelled] -> job
      tries == 0 -> raise "self-check job #{id} did not finish"
      true -> Process.sleep(20) && await_job(trellis, id, tries - 1)
    end
  end

  ## Output

  defp converge(trellis) do
    :ok = Trellis.await_converged(trellis, Trellis.watermark_token!(trellis), timeout_ms: 60_000)
  end

  defp show_targets(pg, transforms) do
    for t <- transforms do
      columns = Enum.join(t.key ++ t.values, ", ")
      say("\n  #{t.name}:")

      show_rows(
        pg,
        "SELECT #{columns} FROM #{t.name} ORDER BY #{hd(t.key)} LIMIT 8",
        t.key ++ t.values
      )
    end
  end

  defp show_rows(pg, sql, headers \\ nil) do
    rows = SimplePG.query!(pg, sql)

    headers =
      headers || sql |> String.split(["SELECT ", " FROM"]) |> Enum.at(1) |> String.split(", ")

    table(headers, Enum.map(rows, fn row -> Enum.map(row, &(&1 || "NULL")) end), 4)
  end

  defp table(headers, rows, margin \\ 2) do
    rows = Enum.map(rows, fn row -> Enum.map(row, &to_string/1) end)

    widths =
      Enum.reduce(rows, Enum.map(headers, &String.length/1), fn row, widths ->
        Enum.zip_with(widths, row, &max(&1, String.length(&2)))
      end)

    line = fn cells ->
      pad = String.duplicate(" ", margin)

      pad <>
        (Enum.zip_with(cells, widths, &String.pad_trailing/2)
         |> Enum.join("  ")
         |> String.trim_trailing())
    end

    say(line.(headers))
    say(line.(Enum.map(widths, &String.duplicate("-", &1))))
    Enum.each(rows, &say(line.(&1)))
    if rows == [], do: say(String.duplicate(" ", margin) <> "(no rows)")
  end

  defp wrap(text, width) do
    text
    |> String.split(" ")
    |> Enum.reduce([""], fn
      word, ["" | done] ->
        [word | done]

      word, [line | done] ->
        if String.length(line <> " " <> word) > width,
          do: [word, line | done],
          else: [line <> " " <> word | done]
    end)
    |> Enum.reverse()
    |> Enum.join("\n")
  end

  defp heading(text), do: say("\n== " <> text)
  defp say(text), do: IO.puts(text)

  defp indent(text, n),
    do: text |> String.split("\n") |> Enum.map_join("\n", &(String.duplicate(" ", n) <> &1))

  defp ms_since(started), do: System.monotonic_time(:millisecond) - started
  defp time_of_day(nil), do: "-"

  defp time_of_day(%DateTime{} = at),
    do: at |> DateTime.to_time() |> Time.truncate(:millisecond) |> to_string()
end

# The port's log lines reach Logger (Trellis.LogBridge); the demo prints what
# they say itself, in its own layout.
Logger.configure(level: :error)
Demo.run(System.fetch_env!("TRELLIS_DEMO_URL"))
