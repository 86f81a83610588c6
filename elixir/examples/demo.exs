# The Trellis demo: run by scripts/demo.sh against a throwaway PostgreSQL.
#
# It opens a handle (the real trellis-port program), shows what the port
# reports about itself and the database, defines a transform, writes rows
# from Elixir, and shows the target following them until it is :live.

alias Trellis.Test.SimplePG

url = System.fetch_env!("TRELLIS_DEMO_URL")
say = fn text -> IO.puts(text) end

show_target = fn pg ->
  rows = SimplePG.query!(pg, "SELECT id, label, price FROM widget_prices ORDER BY id")
  for [id, label, price] <- rows, do: say.("    #{id}  #{label}  #{price}")
  if rows == [], do: say.("    (empty)")
end

converge = fn trellis ->
  :ok = Trellis.await_converged(trellis, Trellis.watermark_token!(trellis), timeout_ms: 30_000)
end

pg = SimplePG.connect!(url)

SimplePG.query!(pg, """
CREATE TABLE widgets (id bigint PRIMARY KEY, name text NOT NULL, price numeric(10, 2));
INSERT INTO widgets VALUES (1, 'sprocket', 4.50), (2, 'flange', 12.00), (3, 'gasket', 0.75);
""")

# A migration step, as a deploy would run it: nothing in the background.
{:ok, migrator} = Trellis.connect(url: url)
info = Trellis.server_info!(migrator)

say.(
  "trellis-port #{info.engine_version}, protocol #{elem(info.protocol_version, 0)}.#{elem(info.protocol_version, 1)}"
)

say.("PostgreSQL #{info.server_version}, instance #{info.instance}")
:ok = Trellis.migrate(migrator)
:ok = Trellis.shutdown(migrator)

# The app's handle: the instance's staging worker and two drain threads.
{:ok, trellis} = Trellis.connect(url: url, staging: true, drain_threads: 2)

statement =
  "TRANSFORM widget_prices FROM widgets SELECT upper(name) AS label, price AS price WHERE price >= 1"

say.("\n#{statement}")
{:ok, {:transform_defined, "widget_prices"}} = Trellis.define(trellis, statement)
converge.(trellis)
say.("  after the backfill:")
show_target.(pg)

SimplePG.query!(pg, """
INSERT INTO widgets VALUES (4, 'bracket', 3.20), (5, 'washer', 0.10);
UPDATE widgets SET price = 9.99 WHERE id = 3;
DELETE FROM widgets WHERE id = 2;
""")

say.("\nwrote: inserted 4 and 5 (5 is under the WHERE), repriced 3 into it, deleted 2")
converge.(trellis)
say.("  the target followed:")
show_target.(pg)

# The staging worker promotes a caught-up transform to :live.
status =
  Enum.reduce_while(1..250, nil, fn _, _ ->
    status = Trellis.status!(trellis, "widget_prices")
    if status.status == :live, do: {:halt, status}, else: Process.sleep(20) && {:cont, status}
  end)

say.(
  "\nstatus: #{status.status}, backlog #{status.backlog_pages} pages, #{status.backfill.rows_done} rows backfilled"
)

say.("\ndefinitions:")
for d <- Trellis.definitions!(trellis), do: say.("  #{d.name}: #{d.statement}")

:ok = Trellis.shutdown(trellis)
SimplePG.close(pg)
