defmodule Trellis.Test.Targets do
  @moduledoc false

  # Comparing a target with the query it must equal, once the engine has
  # caught up with every write committed so far.

  alias Trellis.Test.SimplePG

  @doc "Waits until every write committed before the call is in every target."
  @spec converge!(Trellis.t(), pos_integer) :: :ok
  def converge!(trellis, timeout_ms \\ 60_000) do
    :ok =
      Trellis.await_converged(trellis, Trellis.watermark_token!(trellis), timeout_ms: timeout_ms)
  end

  @doc """
  Asserts that a refused define left nothing behind: no transform, no
  captured source, no target table `public.t`, no Trellis trigger.
  """
  @spec assert_nothing_created(SimplePG.t()) :: true
  def assert_nothing_created(pg) do
    import ExUnit.Assertions
    assert SimplePG.scalar!(pg, "SELECT count(*) FROM trellis.transforms") == "0"
    assert SimplePG.scalar!(pg, "SELECT count(*) FROM trellis.sources") == "0"
    assert SimplePG.scalar!(pg, "SELECT to_regclass('public.t') IS NULL") == "t"

    assert SimplePG.scalar!(pg, "SELECT count(*) FROM pg_trigger WHERE tgname LIKE 'trellis%'") ==
             "0"
  end

  @doc """
  The number of rows in which the results of two queries differ, counted with
  multiplicity both ways (EXCEPT ALL), as text: "0" when they are equal.
  """
  @spec differences(SimplePG.t(), String.t(), String.t()) :: String.t()
  def differences(pg, left, right) do
    SimplePG.scalar!(
      pg,
      "SELECT count(*) FROM ((#{left} EXCEPT ALL #{right}) " <>
        "UNION ALL (#{right} EXCEPT ALL #{left})) d"
    )
  end

  @doc """
  Up to 10 rows in which the results of two queries differ, each marked with
  the side it is only on, as one string for a failure message.
  """
  @spec difference_sample(SimplePG.t(), String.t(), String.t()) :: String.t()
  def difference_sample(pg, left, right) do
    SimplePG.scalar!(
      pg,
      "SELECT coalesce(string_agg(d, '; '), '') FROM (SELECT d FROM (" <>
        "SELECT 'target only ' || x::text AS d FROM ((#{left}) EXCEPT ALL (#{right})) x " <>
        "UNION ALL SELECT 'definition only ' || y::text FROM ((#{right}) EXCEPT ALL (#{left})) y" <>
        ") z LIMIT 10) w"
    )
  end

  @doc """
  Defines each `{name, statement, query}` of `transforms` through `handle`
  (the query is the one the target must equal, see `assert_all_equal/5`).
  """
  @spec define_all!(Trellis.t(), [{String.t(), String.t(), String.t()}]) :: :ok
  def define_all!(handle, transforms) do
    for {_name, statement, _query} <- transforms do
      {:ok, {:transform_defined, _}} = Trellis.define(handle, statement)
    end

    :ok
  end

  @doc """
  Waits until every write committed so far is in every target, then asserts
  that each `{name, statement, query}` of `transforms` has its target equal
  to its query; `context` (a seed, the step just made) goes in the message.
  """
  @spec assert_all_equal(
          Trellis.t(),
          SimplePG.t(),
          [{String.t(), String.t(), String.t()}],
          String.t()
        ) ::
          :ok
  def assert_all_equal(handle, pg, transforms, context) do
    import ExUnit.Assertions
    converge!(handle, 240_000)

    for {name, _statement, query} <- transforms do
      target = "TABLE #{name}"

      if differences(pg, target, query) != "0" do
        flunk(
          "#{name} differs (#{context}): #{difference_sample(pg, target, query)}; " <>
            "status #{inspect(Trellis.status(handle, name))}"
        )
      end
    end

    :ok
  end

  @doc """
  Defines each transform of `transforms`, `{name, statement, columns,
  query}` tuples as the compiled-statement tests list them.
  """
  @spec define_compiled!(Trellis.t(), [{String.t(), String.t(), String.t(), String.t()}]) :: :ok
  def define_compiled!(handle, transforms) do
    import ExUnit.Assertions

    for {_name, statement, _columns, _query} <- transforms do
      assert {:ok, {:transform_defined, _}} = Trellis.define(handle, statement)
    end

    :ok
  end

  @doc """
  Waits until `handle` has converged, then asserts that each transform's
  `columns` equal its `query`; the message names `seed` to replay with.
  """
  @spec assert_compiled_equal(
          Trellis.t(),
          SimplePG.t(),
          [{String.t(), String.t(), String.t(), String.t()}],
          integer()
        ) :: :ok
  def assert_compiled_equal(handle, pg, transforms, seed) do
    import ExUnit.Assertions
    converge!(handle, 240_000)

    for {name, _statement, columns, query} <- transforms do
      assert differences(pg, "SELECT #{columns} FROM #{name}", query) == "0",
             "#{name} differs (seed #{seed}; rerun with TRELLIS_SEED=#{seed})"
    end

    :ok
  end

  @doc """
  Asserts that `definitions/1` shows each of `transforms` (`{name,
  statement, columns, query}`) as written: its WHERE as in `statement`, and
  nothing of its hidden stages (`__trellis` names, a subquery's
  `trellis_subquery` alias).
  """
  @spec assert_shown_as_written!(Trellis.t(), [{String.t(), String.t(), String.t(), String.t()}]) ::
          :ok
  def assert_shown_as_written!(handle, transforms) do
    import ExUnit.Assertions
    {:ok, definitions} = Trellis.definitions(handle)

    for {name, statement, _, _} <- transforms do
      [_, where] = String.split(statement, " WHERE ", parts: 2)
      %Trellis.Definition{statement: shown} = Enum.find(definitions, &(&1.name == name))
      assert String.ends_with?(shown, " WHERE " <> where), "#{name} shows #{shown}"
      refute shown =~ "__trellis", "#{name} shows #{shown}"
      refute shown =~ "trellis_subquery", "#{name} shows #{shown}"
    end

    :ok
  end

  @doc """
  Why `name`'s slot is read by peeks rather than a walsender stream, as
  status/2 tells it (`capture_fallback`), or nil.
  """
  @spec capture_fallback(Trellis.t(), String.t()) :: String.t() | nil
  def capture_fallback(handle, name) do
    {:ok, status} = Trellis.status(handle, name)
    status.capture_fallback
  end

  @doc """
  How many walsenders hold a replication slot of the current database: the
  staging worker's stream, when it runs one.
  """
  @spec walsenders(SimplePG.t()) :: String.t()
  def walsenders(pg) do
    SimplePG.scalar!(
      pg,
      "SELECT count(*) FROM pg_replication_slots s JOIN pg_stat_activity a " <>
        "ON a.pid = s.active_pid WHERE a.backend_type = 'walsender' " <>
        "AND s.database = current_database()"
    )
  end

  @doc """
  Asserts that each of `transforms` (`{name, statement, columns, query}`) is
  live with no page left.
  """
  @spec assert_all_live!(Trellis.t(), [{String.t(), String.t(), String.t(), String.t()}]) :: :ok
  def assert_all_live!(handle, transforms) do
    import ExUnit.Assertions

    for {name, _statement, _columns, _query} <- transforms do
      assert {:ok, %Trellis.Status{status: :live, backlog_pages: 0}} =
               Trellis.status(handle, name)
    end

    :ok
  end

  @doc """
  Asserts that each of `transforms` (`{name, statement, columns, query}`) is
  live with no page left and that a full self-check finds it clean.
  """
  def assert_live_and_clean!(handle, transforms, seed) do
    import ExUnit.Assertions

    for {name, _statement, _columns, _query} <- transforms do
      assert {:ok, %Trellis.Status{status: :live, backlog_pages: 0}} =
               Trellis.status(handle, name)

      {:ok, %Trellis.SelfCheckJob{id: id}} = Trellis.self_check(handle, name, mode: :full)

      assert %{state: :done, report: %{outcome: :clean}} = await_self_check!(handle, id),
             "#{name} self-check (seed #{seed})"
    end

    :ok
  end

  @doc """
  Every later batch of every transform by its keys or deltas, never by a
  rebuild of the whole target, which would mend whatever the key-by-key
  upkeep under test got wrong (the chooser takes no rebuild while one is
  marked failed).
  """
  def keep_off_rebuilds!(pg) do
    SimplePG.query!(pg, """
    INSERT INTO trellis.batch_paths (transform_id, path, factor, us_per_row, failed_at)
    SELECT id, 'rebuild', 1, 0, now() + interval '1 day' FROM trellis.transforms
    ON CONFLICT (transform_id, path) DO UPDATE SET failed_at = EXCLUDED.failed_at
    """)
  end

  @doc "Polls self-check job `id` until it has finished (about 150 s at most); returns it."
  def await_self_check!(trellis, id, left \\ 3000) do
    job = Trellis.self_check_job!(trellis, id)

    cond do
      job.state in [:done, :failed, :cancelled] -> job
      left == 0 -> ExUnit.Assertions.flunk("self-check job #{id} did not finish: #{inspect(job)}")
      true -> Process.sleep(50) && await_self_check!(trellis, id, left - 1)
    end
  end
end
