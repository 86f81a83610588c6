# Run inside the throwaway host app by install_test.sh (`mix run check.exs`):
# uses trellis_pg as a user would, through the binary its compile installed.
url = System.fetch_env!("DATABASE_URL")
psql_path = Path.join(System.get_env("PG_BIN", "/usr/lib/postgresql/15/bin"), "psql")

psql = fn sql ->
  {out, 0} = System.cmd(psql_path, [url, "-v", "ON_ERROR_STOP=1", "-qAtc", sql])
  out
end

{:ok, binary} = Trellis.PortBinary.path()
expected = Path.join(to_string(:code.priv_dir(:trellis_pg)), "trellis-port")
if binary != expected, do: raise("the app runs #{binary}, not the installed #{expected}")

source = "items_#{System.os_time()}_#{:rand.uniform(1_000_000)}"
psql.("CREATE TABLE #{source} (id bigint PRIMARY KEY, price numeric)")

{:ok, migrator} = Trellis.connect(url: url)
:ok = Trellis.migrate(migrator)
:ok = Trellis.shutdown(migrator)

{:ok, trellis} = Trellis.connect(url: url, staging: true, drain_threads: 1)
statement = "TRANSFORM #{source}_dear FROM #{source} SELECT price AS price WHERE price > 1"
{:ok, {:transform_defined, target}} = Trellis.define(trellis, statement)

converge = fn ->
  :ok = Trellis.await_converged(trellis, Trellis.watermark_token!(trellis), timeout_ms: 60_000)
  psql.("SELECT price FROM #{target} ORDER BY price")
end

psql.("INSERT INTO #{source} VALUES (1, 5), (2, 0.5), (3, 7)")
"5\n7\n" = converge.()
psql.("UPDATE #{source} SET price = 9 WHERE id = 2; DELETE FROM #{source} WHERE id = 1")
"7\n9\n" = converge.()
:ok = Trellis.shutdown(trellis)
IO.puts("install check: #{target} follows #{source} through #{binary}")
