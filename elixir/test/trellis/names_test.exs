defmodule Trellis.NamesTest do
  # Names users pass back (Trellis.Applied, "Names you can pass back"): the
  # name define/2 returns and the addresses RESUME returns are taken back
  # unchanged by every statement and read, whatever the name looks like.
  use ExUnit.Case, async: true

  alias Trellis.Error
  alias Trellis.Test.{Database, SimplePG}

  @moduletag :port
  @moduletag timeout: 120_000

  setup do
    %{url: url, pg: pg} = Database.open!("names")

    SimplePG.query!(pg, """
    CREATE SCHEMA app;
    CREATE TABLE widgets (id int PRIMARY KEY, price int);
    INSERT INTO widgets VALUES (1, 10), (2, 20);
    """)

    {:ok, trellis} = Trellis.connect(url: url, timeout_ms: 10_000)
    on_exit(fn -> Trellis.shutdown(trellis) end)
    :ok = Trellis.migrate(trellis)
    %{trellis: trellis}
  end

  # {target as written in the TRANSFORM, the name returned, its schema}
  @names [
    {"widget_prices", "widget_prices", "public"},
    {~s("it's"), ~s("it's"), "public"},
    {~s("MixedCase"), ~s("MixedCase"), "public"},
    {"UPPER_folds", "upper_folds", "public"},
    {~s("größen"), ~s("größen"), "public"},
    {~s("a.b"), ~s("a.b"), "public"},
    {~s(app."Widget Totals"), ~s("Widget Totals"), "app"},
    {"app.plain_totals", "plain_totals", "app"}
  ]

  for {written, returned, schema} <- @names do
    test "#{written}: the returned name round-trips through every statement and read",
         %{trellis: trellis} do
      written = unquote(written)
      name = unquote(returned)
      schema = unquote(schema)

      statement = ~s(TRANSFORM #{written} FROM widgets SELECT price AS "Unit Price", id AS id)
      assert {:ok, {:transform_defined, ^name}} = Trellis.define(trellis, statement)

      # Reads: the name as returned, and schema-qualified like a statement.
      assert {:ok, %Trellis.Status{name: ^name} = status} = Trellis.status(trellis, name)
      assert String.starts_with?(status.target_table, schema <> ".")
      assert {:ok, %Trellis.Status{name: ^name}} = Trellis.status(trellis, "#{schema}.#{name}")
      assert :ok = Trellis.request_backfill(trellis, name)

      assert {:ok, definitions} = Trellis.definitions(trellis)
      assert [%Trellis.Definition{name: ^name}] = Enum.filter(definitions, &(&1.name == name))

      # A self-check job names its target the same way, started and read back.
      assert {:ok, %Trellis.SelfCheckJob{id: id, target: ^name}} =
               Trellis.self_check(trellis, name)

      assert {:ok, %Trellis.SelfCheckJob{target: ^name}} = Trellis.self_check_job(trellis, id)

      # Statements: the transform, then one of its columns by the address
      # RESUME returned.
      assert {:ok, :paused} = Trellis.apply(trellis, "PAUSE TRANSFORM #{name}")
      assert {:ok, {:resumed, [^name]}} = Trellis.apply(trellis, "RESUME TRANSFORM #{name}")

      column = ~s(#{name}."Unit Price")
      assert {:ok, :paused} = Trellis.apply(trellis, "PAUSE TRANSFORM #{column}")
      assert {:ok, {:resumed, [^column]}} = Trellis.apply(trellis, "RESUME TRANSFORM #{column}")
      assert {:ok, :paused} = Trellis.apply(trellis, "PAUSE TRANSFORM #{column}")
      assert {:ok, {:resumed, [^column]}} = Trellis.apply(trellis, "RESUME TRANSFORM #{column}")

      assert {:ok, {:altered, ^name}} =
               Trellis.apply(trellis, "ALTER TRANSFORM #{name} ADD COLUMN price * 2 AS doubled")

      assert {:ok, :paused} = Trellis.apply(trellis, "PAUSE TRANSFORM #{name}")
      assert {:ok, {:dropped, ^name}} = Trellis.apply(trellis, "DROP TRANSFORM #{name}")
      assert {:error, %Error{code: :not_found}} = Trellis.status(trellis, name)
    end
  end

  test "a read given text that is not a name is a :validation error; an unknown name :not_found",
       %{trellis: trellis} do
    {:ok, {:transform_defined, "w"}} =
      Trellis.define(trellis, "TRANSFORM w FROM widgets SELECT price AS p")

    for bad <- ["", "  ", "a b", "w;", "a.b.c", ~s("unterminated)] do
      assert {:error, %Error{code: :validation, message: message}} = Trellis.status(trellis, bad)
      assert message =~ "not a transform name"
      assert {:error, %Error{code: :validation}} = Trellis.request_backfill(trellis, bad)
    end

    # Quoted names keep their case, plain ones fold: as in a statement.
    assert {:ok, %{name: "w"}} = Trellis.status(trellis, "W")
    assert {:error, %Error{code: :not_found}} = Trellis.status(trellis, ~s("W"))
    assert {:error, %Error{code: :not_found, message: message}} = Trellis.status(trellis, "app.w")
    assert message =~ "writes to schema public"
  end
end
