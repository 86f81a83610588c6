defmodule Trellis.Hardening.LostConnectionTest do
  # Issue 17 item 10: when the connection drops mid-call, the error says what
  # happened and what to do, and never quotes the SQL the engine generated.
  use ExUnit.Case, async: true

  alias Trellis.Test.{Database, SimplePG}

  @moduletag :port
  @moduletag timeout: 120_000

  setup do
    %{url: url, pg: pg} = Database.open!("lost_conn")
    SimplePG.query!(pg, "CREATE TABLE widgets (id int PRIMARY KEY, price numeric)")
    trellis = Trellis.Test.Handles.connect!(url, application_name: "lost_conn_test")
    :ok = Trellis.migrate(trellis)
    %{url: url, pg: pg, trellis: trellis}
  end

  defp await_lock_waiter(admin, tries \\ 100) do
    pid =
      SimplePG.scalar!(admin, """
      SELECT coalesce(max(pid), 0) FROM pg_stat_activity
      WHERE application_name = 'lost_conn_test' AND wait_event_type = 'Lock'
      """)

    cond do
      pid != "0" -> pid
      tries == 0 -> flunk("define never waited on the lock")
      true -> Process.sleep(50) && await_lock_waiter(admin, tries - 1)
    end
  end

  test "a define whose backend is terminated fails with :connection and no internal SQL",
       %{url: url, pg: pg, trellis: trellis} do
    SimplePG.query!(pg, "BEGIN; LOCK TABLE widgets IN ACCESS EXCLUSIVE MODE")

    define =
      Task.async(fn ->
        Trellis.define(trellis, "TRANSFORM t FROM widgets SELECT price AS price WHERE price > 0")
      end)

    admin = SimplePG.connect!(url)
    pid = await_lock_waiter(admin)
    SimplePG.query!(admin, "SELECT pg_terminate_backend(#{pid})")
    SimplePG.close(admin)

    assert {:error, %Trellis.Error{code: :connection, message: message}} = Task.await(define)
    assert message =~ "the connection to the database was lost during the call"
    assert message =~ "retry"

    for internal <- ["LINE", "SELECT", "CREATE", "trellis_", "QUERY", "CONTEXT", "^"] do
      refute message =~ internal, "#{inspect(internal)} in #{inspect(message)}"
    end

    SimplePG.query!(pg, "ROLLBACK")
    # The handle goes on with a new session, and the define changed nothing.
    assert {:ok, []} = Trellis.definitions(trellis)
  end
end
