defmodule Trellis.Hardening.HostileTextTest do
  # Issue 17 item 4: a NUL byte or invalid UTF-8 in any string argument is
  # refused with :validation naming the argument and the byte, before libpq
  # sees it. A NUL used to cut the name short there, so "b_ok\0junk" named
  # b_ok, and request_backfill rebuilt it.
  use ExUnit.Case, async: true

  alias Trellis.Test.{Database, SimplePG}

  @moduletag :port
  @moduletag timeout: 120_000

  setup do
    url = Database.create!("hostile_text")
    pg = SimplePG.connect!(url)

    SimplePG.query!(pg, """
    CREATE TABLE widgets (id int PRIMARY KEY, price numeric);
    INSERT INTO widgets SELECT g, g FROM generate_series(1, 20) g;
    """)

    :ok = Trellis.migrate(Trellis.Test.Handles.connect!(url))
    trellis = Trellis.connect!(url: url, staging: true, drain_threads: 1, timeout_ms: 30_000)

    {:transform_defined, "b_ok"} =
      Trellis.define!(trellis, "TRANSFORM b_ok FROM widgets SELECT price AS price")

    converge(trellis)

    on_exit(fn ->
      Trellis.shutdown(trellis)
      SimplePG.close(pg)
    end)

    %{trellis: trellis, pg: pg}
  end

  defp converge(trellis) do
    :ok = Trellis.await_converged(trellis, Trellis.watermark_token!(trellis), timeout_ms: 30_000)
  end

  defp assert_refused(result, argument, what, byte) do
    assert {:error, %Trellis.Error{code: :validation, message: message}} = result
    assert message =~ ~s(argument "#{argument}" contains #{what} at byte #{byte})
  end

  test "status of a name with a NUL byte is refused, not answered for the name before it",
       %{trellis: trellis} do
    assert_refused(Trellis.status(trellis, "b_ok\0junk"), "target", "a NUL byte", 4)
    assert {:ok, %Trellis.Status{name: "b_ok"}} = Trellis.status(trellis, "b_ok")
  end

  test "request_backfill of a name with a NUL byte is refused and rebuilds nothing",
       %{trellis: trellis, pg: pg} do
    # A target row changed by hand stays changed until something rebuilds it.
    SimplePG.query!(pg, "UPDATE b_ok SET price = -1 WHERE id = 1")
    assert_refused(Trellis.request_backfill(trellis, "b_ok\0junk"), "target", "a NUL byte", 4)
    converge(trellis)
    assert SimplePG.scalar!(pg, "SELECT price FROM b_ok WHERE id = 1") == "-1"
  end

  test "invalid UTF-8 in names and statements is :validation, not a database error",
       %{trellis: trellis, pg: pg} do
    assert_refused(Trellis.status(trellis, "b_\xFFok"), "target", "an invalid UTF-8 sequence", 2)

    assert_refused(
      Trellis.request_backfill(trellis, "b_ok\xC3"),
      "target",
      "an invalid UTF-8 sequence",
      4
    )

    assert_refused(
      Trellis.define(trellis, "TRANSFORM t\xE9 FROM widgets SELECT price AS price"),
      "statement",
      "an invalid UTF-8 sequence",
      11
    )

    assert_refused(
      Trellis.apply(trellis, "PAUSE TRANSFORM b_ok\0"),
      "statement",
      "a NUL byte",
      20
    )

    assert SimplePG.scalar!(pg, "SELECT count(*) FROM trellis.transforms") == "1"
    assert {:ok, %Trellis.Status{status: status}} = Trellis.status(trellis, "b_ok")
    assert status in [:catching_up, :live]
  end
end
