defmodule Trellis.StructureDumpTest do
  # Trellis.StructureDump.append/2 through the real port. The whole cycle
  # (mix ecto.dump, mix ecto.load, the app rebuilding its targets) runs in
  # elixir/examples/ecto_app, driven by scripts/test-ecto.sh.
  use ExUnit.Case, async: true

  alias Trellis.StructureDump
  alias Trellis.Test.{Database, SimplePG}

  @moduletag :port
  @moduletag :capture_log

  setup do
    dir = Path.join(System.tmp_dir!(), "structure_dump_#{System.unique_integer([:positive])}")
    File.mkdir_p!(dir)
    on_exit(fn -> File.rm_rf!(dir) end)
    url = Database.create!("structure_dump")
    pg = SimplePG.connect!(url)
    SimplePG.query!(pg, "CREATE TABLE widgets (id int PRIMARY KEY, price int)")
    SimplePG.close(pg)
    trellis = Trellis.connect!(url: url)
    :ok = Trellis.migrate(trellis)

    {:transform_defined, _} =
      Trellis.define!(trellis, "TRANSFORM widget_prices FROM widgets SELECT price AS price")

    path = Path.join(dir, "structure.sql")
    %{trellis: trellis, path: path}
  end

  test "appends the definitions after what the file holds", %{trellis: trellis, path: path} do
    File.write!(path, "-- dumped by someone else\nCREATE TABLE public.widgets ();\n")

    assert StructureDump.append(trellis, path) == :ok

    assert File.read!(path) ==
             "-- dumped by someone else\nCREATE TABLE public.widgets ();\n" <>
               Trellis.dump_definitions_sql!(trellis)

    assert File.read!(path) =~ ~s(INSERT INTO "trellis".transforms)
  end

  test "makes pg_dump's CREATE SCHEMA public loadable into a database that has it",
       %{trellis: trellis, path: path} do
    File.write!(path, "CREATE SCHEMA public;\nCREATE SCHEMA trellis;\n-- CREATE SCHEMA public;\n")

    assert StructureDump.append!(trellis, path) == :ok

    assert File.read!(path) =~
             ~r/\ACREATE SCHEMA IF NOT EXISTS public;\nCREATE SCHEMA trellis;\n-- CREATE SCHEMA public;\n/
  end

  test "a missing file is a :validation error and creates nothing", %{
    trellis: trellis,
    path: path
  } do
    assert {:error, %Trellis.Error{code: :validation, message: message}} =
             StructureDump.append(trellis, path)

    assert message =~ "no structure file at #{path}"
    refute File.exists?(path)

    assert_raise Trellis.Error, ~r/dump the schema first/, fn ->
      StructureDump.append!(trellis, path)
    end
  end

  test "a catalog that was never migrated is :not_migrated, and the file is untouched",
       %{path: path} do
    other = Trellis.connect!(url: Database.create!("structure_dump_empty"))
    File.write!(path, "-- dump\n")

    assert {:error, %Trellis.Error{code: :not_migrated}} = StructureDump.append(other, path)
    assert File.read!(path) == "-- dump\n"
  end
end
