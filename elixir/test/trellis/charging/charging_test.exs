defmodule Trellis.Charging.ChargingTest do
  # Failure charging (issue 13) through the real port and PostgreSQL: rows
  # whose values fail are charged to their columns (quarantine), keys the
  # target refuses are held, failures charged to nothing are drain failures;
  # everything else keeps flowing and await_converged returns in each case.
  use ExUnit.Case, async: true

  alias Trellis.Test.{Database, SimplePG}

  import Trellis.Test.Eventually, only: [eventually: 1, eventually: 2]

  @moduletag :port
  @moduletag :capture_log
  @moduletag timeout: 300_000

  # What `units` must hold: the rows whose `unit` fails are in quarantine,
  # NULL there.
  @units "SELECT id, qty, CASE WHEN qty <> 0 THEN 100 / qty END AS unit FROM stock"

  setup do
    %{url: url, pg: pg} = Database.open!("charging")

    SimplePG.query!(pg, """
    CREATE TABLE stock (id int PRIMARY KEY, qty int NOT NULL);
    INSERT INTO stock SELECT g, 1 + g % 7 FROM generate_series(1, 1000) g;
    CREATE TABLE other (id int PRIMARY KEY, v int NOT NULL);
    INSERT INTO other SELECT g, g FROM generate_series(1, 100) g;
    """)

    :ok = Trellis.migrate(Trellis.connect!(url: url))
    trellis = Trellis.connect!(url: url, staging: true, drain_threads: 2)
    %{trellis: trellis, pg: pg, url: url}
  end

  defp define_units(trellis) do
    {:ok, _} =
      Trellis.define(trellis, "TRANSFORM units FROM stock SELECT qty AS qty, 100 / qty AS unit")

    {:ok, _} = Trellis.define(trellis, "TRANSFORM copies FROM other SELECT v AS v")
  end

  defp converge(trellis) do
    :ok = Trellis.await_converged(trellis, Trellis.watermark_token!(trellis), timeout_ms: 60_000)
  end

  defp differences(pg, target, query),
    do: pg |> Trellis.Test.Workload.differences(target, query) |> Integer.to_string()

  defp state(trellis, name) do
    {:ok, status} = Trellis.status(trellis, name)
    status
  end

  defp column(trellis, name, column) do
    Enum.find(state(trellis, name).columns, &(&1.name == column))
  end

  # Every recorded row of `target`, paged `limit` at a time with the cursor.
  defp quarantined_rows(trellis, target, limit \\ 2, cursor \\ nil, acc \\ []) do
    {:ok, %Trellis.SamplePage{samples: samples, next_cursor: next}} =
      Trellis.sample_quarantined(trellis, target, limit: limit, cursor: cursor)

    assert length(samples) <= limit
    acc = acc ++ samples
    if next, do: quarantined_rows(trellis, target, limit, next, acc), else: acc
  end

  defp quarantined_keys(trellis, target) do
    trellis |> quarantined_rows(target) |> Enum.map(& &1.key) |> Enum.sort()
  end

  test "poison in the first build: the build finishes, the failing rows are quarantined",
       %{trellis: trellis, pg: pg} do
    SimplePG.query!(pg, "UPDATE stock SET qty = 0 WHERE id IN (250, 251, 777)")
    define_units(trellis)
    converge(trellis)
    assert eventually(fn -> state(trellis, "units").status == :live end)

    status = state(trellis, "units")
    assert %{state: :live} = column(trellis, "units", "qty")
    assert %{state: :paused, paused_kind: :quarantine} = column(trellis, "units", "unit")
    assert status.held_keys == 0 and status.drain_failure == nil
    assert differences(pg, "units", @units) == "0"
    assert differences(pg, "copies", "SELECT id, v FROM other") == "0"
    assert quarantined_keys(trellis, "units.unit") == [["250"], ["251"], ["777"]]

    assert {:ok, [%Trellis.QuarantineEntry{target: "units.unit", column: "unit", rows: 3} = e]} =
             Trellis.quarantined(trellis)

    assert e.reason =~ "RESUME TRANSFORM units.unit"
    assert {:ok, [^e]} = Trellis.quarantine_status(trellis, "units.unit")
    assert {:ok, [^e]} = Trellis.quarantine_status(trellis, "units")
    assert {:ok, []} = Trellis.quarantine_status(trellis, "units.qty")
    assert {:ok, %DateTime{} = since} = Trellis.poisoned_since(trellis, "units.unit")
    assert since == e.since
    assert {:ok, nil} = Trellis.poisoned_since(trellis, "units.qty")

    [sample | _] = quarantined_rows(trellis, "units")

    assert %Trellis.QuarantineSample{
             target: "units.unit",
             key: ["250"],
             inputs: %{"id" => "250", "qty" => "0"},
             sqlstate: "22012",
             since: %DateTime{}
           } = sample

    assert sample.error =~ "division by zero"

    # Counted per transform.
    :ok = Trellis.Metrics.flush(trellis)
    text = Trellis.Metrics.render_prometheus()
    series = ~s({trellis_instance="#{trellis.instance}",transform="units"})
    assert text =~ "trellis_quarantined_rows_total#{series} 3\n"
    assert text =~ "trellis_quarantined_columns_total#{series} 1\n"
  end

  test "poison in a drain, and in one statement of 10,000 good rows and 3 bad ones",
       %{trellis: trellis, pg: pg} do
    define_units(trellis)
    converge(trellis)

    # A page with one bad key among good ones.
    SimplePG.query!(pg, "UPDATE stock SET qty = CASE WHEN id = 7 THEN 0 ELSE qty + 1 END
                         WHERE id <= 20")

    converge(trellis)
    assert differences(pg, "units", @units) == "0"
    assert quarantined_keys(trellis, "units.unit") == [["7"]]

    # The bulk statement, timed from its commit to its good rows in the
    # target, beside the same statement with no bad row.
    clean_ms = time_bulk(pg, 20_001, [])
    poisoned_ms = time_bulk(pg, 40_001, [40_002, 45_000, 50_003])

    IO.puts(
      "charging: 10,003-row statement in the target after #{clean_ms} ms clean, " <>
        "#{poisoned_ms} ms with 3 bad rows"
    )

    converge(trellis)
    assert differences(pg, "units", @units) == "0"
    assert quarantined_keys(trellis, "units.unit") == [["40002"], ["45000"], ["50003"], ["7"]]
    assert %{status: :live, held_keys: 0, drain_failure: nil} = state(trellis, "units")
    assert %{status: :live} = state(trellis, "copies")

    # The quarantined column keeps flowing for every other key.
    SimplePG.query!(pg, "UPDATE stock SET qty = qty + 2 WHERE id BETWEEN 100 AND 200")
    converge(trellis)
    assert differences(pg, "units", @units) == "0"
  end

  # Inserts ids first..first+10,002 in one statement (qty 0 for `bad`) and
  # returns the milliseconds until the good rows are all in `units`.
  defp time_bulk(pg, first, bad) do
    last = first + 10_002
    bad_list = Enum.join([0 | bad], ", ")
    started = System.monotonic_time(:millisecond)

    SimplePG.query!(pg, """
    INSERT INTO stock SELECT g, CASE WHEN g IN (#{bad_list}) THEN 0 ELSE 1 + g % 5 END
    FROM generate_series(#{first}, #{last}) g
    """)

    query =
      "SELECT count(*) FROM units WHERE id BETWEEN #{first} AND #{last} AND unit IS NOT NULL"

    good = Integer.to_string(10_003 - length(bad))
    assert eventually(fn -> SimplePG.scalar!(pg, query) == good end, 6000)
    System.monotonic_time(:millisecond) - started
  end

  test "poison in a rebuild; RESUME of the column rebuilds it; rows still bad quarantine it again",
       %{trellis: trellis, pg: pg} do
    define_units(trellis)
    converge(trellis)
    SimplePG.query!(pg, "UPDATE stock SET qty = 0 WHERE id IN (3, 30, 300)")
    converge(trellis)
    assert quarantined_keys(trellis, "units.unit") == [["3"], ["30"], ["300"]]

    # A whole rebuild computes every row again: the same rows fail.
    :ok = Trellis.request_backfill(trellis, "units")
    converge(trellis)
    assert eventually(fn -> state(trellis, "units").status == :live end)
    assert differences(pg, "units", @units) == "0"
    assert quarantined_keys(trellis, "units.unit") == [["3"], ["30"], ["300"]]

    # Two fixed: RESUME rebuilds the column; the one still bad is back in
    # quarantine, alone.
    SimplePG.query!(pg, "UPDATE stock SET qty = 2 WHERE id IN (3, 30)")

    assert {:ok, {:resumed, ["units.unit"]}} =
             Trellis.apply(trellis, "RESUME TRANSFORM units.unit")

    converge(trellis)
    assert eventually(fn -> column(trellis, "units", "unit").paused_kind == :quarantine end)
    assert quarantined_keys(trellis, "units.unit") == [["300"]]
    assert differences(pg, "units", @units) == "0"

    # The last one fixed by a write: it heals, and the column is live again
    # without a RESUME.
    SimplePG.query!(pg, "UPDATE stock SET qty = 2 WHERE id = 300")
    converge(trellis)
    assert eventually(fn -> column(trellis, "units", "unit").state == :live end)
    assert {:ok, []} = Trellis.quarantined(trellis)
    assert differences(pg, "units", "SELECT id, qty, 100 / qty FROM stock") == "0"
  end

  test "a key the target refuses is held, counted, and released with release_key/4",
       %{trellis: trellis, pg: pg} do
    {:ok, _} = Trellis.define(trellis, "TRANSFORM copies FROM stock SELECT qty AS qty")
    converge(trellis)
    # Refuses key 13 whatever its values, so no column can be charged.
    SimplePG.query!(pg, "ALTER TABLE copies ADD CONSTRAINT no_13 CHECK (id <> 13) NOT VALID")
    SimplePG.query!(pg, "UPDATE stock SET qty = qty + 100 WHERE id BETWEEN 10 AND 16")
    converge(trellis)

    assert %{status: :live, held_keys: 1, drain_failure: nil} = state(trellis, "copies")
    # The held row stays as it was; every other key arrived.
    assert differences(pg, "copies", "SELECT id, CASE WHEN id = 13 THEN qty - 100 ELSE qty END
                                      FROM stock") == "0"

    # Not fixed yet: held again, with the error.
    assert {:error, %Trellis.Error{code: :database, message: message}} =
             Trellis.release_key(trellis, "copies", [13], [])

    assert message =~ "stays held" and message =~ "no_13"
    assert %{held_keys: 1} = state(trellis, "copies")

    assert {:error, %Trellis.Error{code: :not_found}} =
             Trellis.release_key(trellis, "copies", ["14"])

    assert {:error, %Trellis.Error{code: :validation}} =
             Trellis.release_key(trellis, "copies", [13, 1])

    assert_raise ArgumentError, fn -> Trellis.release_key(trellis, "copies", 13) end

    SimplePG.query!(pg, "ALTER TABLE copies DROP CONSTRAINT no_13")
    assert :ok = Trellis.release_key!(trellis, "copies", ["13"])
    assert %{held_keys: 0} = state(trellis, "copies")
    assert differences(pg, "copies", "SELECT id, qty FROM stock") == "0"
  end

  test "a CHECK added on a live target holds the key it refuses: its row stays, no NULL is " <>
         "written, and a write that fixes the row releases it",
       %{trellis: trellis, pg: pg} do
    {:ok, _} = Trellis.define(trellis, "TRANSFORM balances FROM stock SELECT qty AS balance")
    converge(trellis)
    SimplePG.query!(pg, "ALTER TABLE balances ADD CONSTRAINT capped CHECK (balance < 1000000)")
    SimplePG.query!(pg, "UPDATE stock SET qty = CASE WHEN id = 5 THEN 2000000 ELSE qty + 1 END
                         WHERE id BETWEEN 4 AND 6")
    converge(trellis)

    # Held, never quarantined: the column stays live and the row as it was
    # (1 + 5 % 7 = 6), never NULL.
    assert %{status: :live, held_keys: 1, drain_failure: nil} = state(trellis, "balances")
    assert %{state: :live} = column(trellis, "balances", "balance")
    assert {:ok, []} = Trellis.quarantined(trellis)
    assert SimplePG.scalar!(pg, "SELECT balance FROM balances WHERE id = 5") == "6"

    assert [[_, "23514", error]] =
             SimplePG.query!(pg, "SELECT key[1], sqlstate, error FROM trellis.held_keys")

    assert error =~ "capped"

    assert differences(pg, "balances", "SELECT id, CASE WHEN id = 5 THEN 6 ELSE qty END
                                         FROM stock") == "0"

    SimplePG.query!(pg, "UPDATE stock SET qty = 999999 WHERE id = 5")
    converge(trellis)
    assert %{held_keys: 0} = state(trellis, "balances")
    assert differences(pg, "balances", "SELECT id, qty FROM stock") == "0"
  end

  test "a row whose expression fails and whose other value the target refuses is held, " <>
         "not quarantined",
       %{trellis: trellis, pg: pg} do
    {:ok, _} =
      Trellis.define(trellis, "TRANSFORM units FROM stock SELECT qty AS qty, 100 / qty AS unit")

    converge(trellis)
    SimplePG.query!(pg, "ALTER TABLE units ADD CONSTRAINT no_zero CHECK (qty <> 0)")
    # 100 / 0 fails first; with unit left out, the target refuses qty = 0.
    SimplePG.query!(pg, "UPDATE stock SET qty = 0 WHERE id = 9")
    converge(trellis)

    assert %{status: :live, held_keys: 1} = state(trellis, "units")
    assert {:ok, []} = Trellis.quarantined(trellis)
    assert SimplePG.scalar!(pg, "SELECT qty || '/' || unit FROM units WHERE id = 9") == "3/33"
    assert SimplePG.scalar!(pg, "SELECT sqlstate FROM trellis.held_keys") == "23514"
  end

  test "a key whose WHERE fails is held; a write that fixes it releases it",
       %{trellis: trellis, pg: pg} do
    {:ok, _} =
      Trellis.define(trellis, "TRANSFORM big FROM stock SELECT qty AS qty WHERE 10 / qty > 1")

    converge(trellis)
    SimplePG.query!(pg, "UPDATE stock SET qty = 0 WHERE id = 42")
    SimplePG.query!(pg, "UPDATE stock SET qty = 2 WHERE id = 43")
    converge(trellis)
    assert %{held_keys: 1, status: :live} = state(trellis, "big")
    assert {:ok, []} = Trellis.quarantined(trellis)
    # The held key's row stays as it was (qty 1 + 42 % 7 = 1, which passed).
    assert SimplePG.scalar!(pg, "SELECT qty FROM big WHERE id = 42") == "1"
    assert SimplePG.scalar!(pg, "SELECT qty FROM big WHERE id = 43") == "2"

    SimplePG.query!(pg, "UPDATE stock SET qty = 3 WHERE id = 42")
    converge(trellis)
    assert %{held_keys: 0} = state(trellis, "big")

    assert differences(pg, "big", "SELECT id, qty FROM stock WHERE 10 / qty > 1") == "0"
  end

  test "a transform that comes to hold 1000 keys is paused with kind :failure; RESUME rebuilds it",
       %{trellis: trellis, pg: pg} do
    {:ok, _} = Trellis.define(trellis, "TRANSFORM copies FROM stock SELECT qty AS qty")
    converge(trellis)
    SimplePG.query!(pg, "INSERT INTO stock SELECT g, 1 FROM generate_series(1001, 1300) g")
    converge(trellis)
    # The target now refuses every row.
    SimplePG.query!(pg, "ALTER TABLE copies ADD CONSTRAINT none CHECK (id < 0) NOT VALID")
    SimplePG.query!(pg, "UPDATE stock SET qty = qty + 1")

    assert eventually(fn -> state(trellis, "copies").status == :paused end, 6000)
    status = state(trellis, "copies")
    assert %{paused_kind: :failure, held_keys: held} = status
    assert held >= 1000
    assert status.paused_reason =~ "RESUME TRANSFORM copies"
    # A paused transform is not waited for.
    converge(trellis)

    SimplePG.query!(pg, "ALTER TABLE copies DROP CONSTRAINT none")
    {:ok, {:resumed, ["copies"]}} = Trellis.apply(trellis, "RESUME TRANSFORM copies")
    converge(trellis)
    assert eventually(fn -> state(trellis, "copies").status == :live end)
    assert %{held_keys: 0} = state(trellis, "copies")
    assert differences(pg, "copies", "SELECT id, qty FROM stock") == "0"
  end

  test "a drain failure: a revoked privilege shows with its SQLSTATE, await_converged names it; " <>
         "granted back, it clears" do
    %{owner: owner, admin: admin} = db = Database.open_owned!("charging_grant")

    SimplePG.query!(owner, """
    CREATE TABLE stock (id int PRIMARY KEY, qty int NOT NULL);
    INSERT INTO stock SELECT g, g FROM generate_series(1, 100) g;
    CREATE TABLE other (id int PRIMARY KEY, v int NOT NULL);
    """)

    :ok = Trellis.migrate(Trellis.connect!(url: db.owner_url))
    trellis = Trellis.connect!(url: db.owner_url, staging: true, drain_threads: 2)
    {:ok, _} = Trellis.define(trellis, "TRANSFORM copies FROM stock SELECT qty AS qty")
    {:ok, _} = Trellis.define(trellis, "TRANSFORM others FROM other SELECT v AS v")
    converge(trellis)

    SimplePG.query!(admin, "REVOKE INSERT, UPDATE, DELETE ON copies FROM #{db.role}")
    SimplePG.query!(owner, "UPDATE stock SET qty = qty + 1 WHERE id <= 10")
    SimplePG.query!(owner, "INSERT INTO other VALUES (1, 1)")

    assert eventually(fn -> state(trellis, "copies").drain_failure != nil end, 500)

    assert %Trellis.DrainFailure{sqlstate: "42501", failure_class: :other, unit: :pages} =
             state(trellis, "copies").drain_failure

    # The other transform flows; the wait names the failing one, at once.
    assert eventually(fn -> differences(owner, "others", "SELECT id, v FROM other") == "0" end)
    started = System.monotonic_time(:millisecond)

    assert {:error, %Trellis.Error{code: :database, message: message}} =
             Trellis.await_converged(trellis, Trellis.watermark_token!(trellis),
               timeout_ms: 60_000
             )

    assert System.monotonic_time(:millisecond) - started < 30_000
    assert message =~ "copies" and message =~ "42501"

    SimplePG.query!(admin, "GRANT INSERT, UPDATE, DELETE ON copies TO #{db.role}")
    # The next retry succeeds (the backoff doubles up to a minute).
    assert eventually(fn -> state(trellis, "copies").drain_failure == nil end, 4000)
    converge(trellis)
    assert differences(owner, "copies", "SELECT id, qty FROM stock") == "0"
  end
end
