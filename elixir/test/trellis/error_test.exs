defmodule Trellis.ErrorTest do
  use ExUnit.Case, async: true

  alias Trellis.Error

  doctest Trellis.Error

  test "every code of the spec maps to its atom" do
    for code <-
          ~w(validation not_found already_exists not_migrated unsupported timeout connection database protocol internal) do
      assert Error.from_wire(%{code: code, message: "m"}).code == String.to_existing_atom(code)
    end
  end

  test "a code newer than the package becomes :unknown and stays in the message" do
    error = Error.from_wire(%{code: "rate_limited", message: "slow down"})
    assert %Error{code: :unknown, message: "rate_limited: slow down"} = error
  end

  test "the message names the code and the database's details" do
    error =
      Error.from_wire(%{
        code: "database",
        message: "duplicate key",
        sqlstate: "23505",
        detail: "Key (id)=(1) exists.",
        hint: nil
      })

    assert Exception.message(error) ==
             "(database) duplicate key\n  sqlstate: 23505\n  detail: Key (id)=(1) exists."
  end

  test "it raises like any exception" do
    assert_raise Error, "(timeout) late", fn -> raise Error.new(:timeout, "late") end
  end
end
