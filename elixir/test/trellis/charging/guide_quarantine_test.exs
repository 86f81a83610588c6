defmodule Trellis.Charging.GuideQuarantineTest do
  # The guide's quarantine example (its Usage section), as written: a
  # column that paused on bad data is found with quarantined/1, its rows are
  # read with sample_quarantined/3 (two pages, with the cursor), the data is
  # fixed and RESUME TRANSFORM widget_prices.price rebuilds the column. The
  # guide leaves the bad data to the reader: here the target's price column
  # is narrowed to numeric(6,2), so a price it cannot hold fails (22003) and
  # price is charged for it. The fix is no write (a write that fixes a row
  # heals it by itself): the column is widened again, and RESUME rebuilds it.
  # A CHECK on the target would hold the keys instead (charging_test.exs).
  use ExUnit.Case, async: true

  alias Trellis.Test.{Database, SimplePG}

  @moduletag :port
  @moduletag :capture_log
  @moduletag timeout: 120_000

  test "a column that paused on bad data: find the rows, fix them, resume it" do
    %{url: url, pg: pg} = Database.open!("guide_quarantine")
    SimplePG.query!(pg, "CREATE TABLE widgets (id int PRIMARY KEY, price numeric)")
    :ok = Trellis.migrate(Trellis.connect!(url: url))

    {:ok, trellis} = Trellis.connect(url: url, staging: true, drain_threads: 2)

    {:ok, _definition} =
      Trellis.define(trellis, "TRANSFORM widget_prices FROM widgets SELECT price AS price")

    {:ok, %Trellis.Status{status: :live}} = Trellis.status(trellis, "widget_prices")

    SimplePG.query!(pg, """
    ALTER TABLE widget_prices ALTER COLUMN price TYPE numeric(6, 2);
    INSERT INTO widgets SELECT g, CASE WHEN g % 5 = 0 THEN g * 10000 ELSE g END
    FROM generate_series(1, 300) g;
    """)

    :ok = Trellis.await_converged(trellis, Trellis.watermark_token!(trellis))

    # A column that paused on bad data: find the rows, fix them, resume it.
    {:ok, [%Trellis.QuarantineEntry{target: "widget_prices.price"} | _]} =
      Trellis.quarantined(trellis)

    {:ok, %Trellis.SamplePage{samples: rows, next_cursor: cursor}} =
      Trellis.sample_quarantined(trellis, "widget_prices.price", limit: 50)

    {:ok, %Trellis.SamplePage{samples: rest, next_cursor: nil}} =
      Trellis.sample_quarantined(trellis, "widget_prices.price", limit: 50, cursor: cursor)

    bad = for g <- 1..300, rem(g, 5) == 0, do: [Integer.to_string(g)]
    assert length(rows) == 50 and length(rest) == 10
    assert Enum.sort(Enum.map(rows ++ rest, & &1.key)) == Enum.sort(bad)
    assert Enum.all?(rows ++ rest, &(&1.sqlstate == "22003" and &1.error =~ "overflow"))

    assert %{state: :paused, paused_kind: :quarantine} =
             Enum.find(Trellis.status!(trellis, "widget_prices").columns, &(&1.name == "price"))

    SimplePG.query!(pg, "ALTER TABLE widget_prices ALTER COLUMN price TYPE numeric")

    {:ok, {:resumed, ["widget_prices.price"]}} =
      Trellis.apply(trellis, "RESUME TRANSFORM widget_prices.price")

    :ok = Trellis.await_converged(trellis, Trellis.watermark_token!(trellis))

    assert %{state: :live} =
             Enum.find(Trellis.status!(trellis, "widget_prices").columns, &(&1.name == "price"))

    assert {:ok, []} = Trellis.quarantined(trellis)

    assert SimplePG.scalar!(pg, """
           SELECT count(*) FROM ((TABLE widget_prices EXCEPT ALL SELECT id, price FROM widgets)
             UNION ALL (SELECT id, price FROM widgets EXCEPT ALL TABLE widget_prices)) d
           """) == "0"

    :ok = Trellis.shutdown(trellis)
  end
end
