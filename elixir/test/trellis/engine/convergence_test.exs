defmodule Trellis.Engine.ConvergenceTest do
  # What a watermark token covers (spec/engine.md "Convergence"): the writes
  # and the definitions committed before it, and nothing after. A transform
  # defined after the token is not waited for, however long its build.
  use ExUnit.Case, async: true

  alias Trellis.Test.{Database, SimplePG}

  @moduletag :port
  @moduletag timeout: 120_000

  setup do
    %{url: url, pg: pg} = Database.open!("convergence")
    SimplePG.query!(pg, "CREATE TABLE gadgets (id int PRIMARY KEY, price int)")
    SimplePG.query!(pg, "INSERT INTO gadgets SELECT g, g FROM generate_series(1, 100) g")
    # No staging or drain worker: a build never starts.
    trellis = Trellis.connect!(url: url)
    :ok = Trellis.migrate(trellis)
    %{url: url, pg: pg, trellis: trellis}
  end

  test "a token does not wait for a transform defined after it", %{trellis: trellis} do
    before = Trellis.watermark_token!(trellis)
    {:ok, _} = Trellis.define(trellis, "TRANSFORM gadget_prices FROM gadgets SELECT price AS p")
    after_define = Trellis.watermark_token!(trellis)

    # The define committed after the first token: its build is not waited for.
    assert :ok = Trellis.await_converged(trellis, before, timeout_ms: 5_000)
    # It committed before the second: its build is.
    assert {:error, %Trellis.Error{code: :timeout}} =
             Trellis.await_converged(trellis, after_define, timeout_ms: 1_000)
  end

  test "a token still waits for writes before it to a transform defined before it",
       %{url: url, pg: pg, trellis: trellis} do
    {:ok, _} = Trellis.define(trellis, "TRANSFORM gadget_prices FROM gadgets SELECT price AS p")
    SimplePG.query!(pg, "UPDATE gadgets SET price = -1 WHERE id = 9")
    token = Trellis.watermark_token!(trellis)
    {:ok, _} = Trellis.define(trellis, "TRANSFORM gadget_copies FROM gadgets SELECT price AS p")

    assert {:error, %Trellis.Error{code: :timeout}} =
             Trellis.await_converged(trellis, token, timeout_ms: 1_000)

    workers = Trellis.connect!(url: url, staging: true, drain_threads: 1)
    assert :ok = Trellis.await_converged(trellis, token, timeout_ms: 60_000)
    assert SimplePG.scalar!(pg, "SELECT p FROM gadget_prices WHERE id = 9") == "-1"
    Trellis.shutdown!(workers)
  end

  test "a token whose transform bound was altered is refused", %{trellis: trellis} do
    token = Trellis.watermark_token!(trellis)
    [snapshot, _bound] = String.split(token, "@")

    for bad <- [snapshot <> "@x", snapshot <> "@-1", "@1"] do
      assert {:error, %Trellis.Error{code: :validation, message: message}} =
               Trellis.await_converged(trellis, bad, timeout_ms: 1_000)

      assert message =~ "not a watermark token"
    end

    # A token of an older engine (the snapshot alone) still covers everything.
    assert :ok = Trellis.await_converged(trellis, snapshot, timeout_ms: 1_000)
  end
end
