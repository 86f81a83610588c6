defmodule Trellis.Migration.Statement do
  @moduledoc false

  # Just enough of the statement grammar (spec/grammar.md, section 2) for
  # Trellis.Migration's guard: the name a TRANSFORM defines, and whether two
  # statements say the same thing. Tokens follow the grammar's lexical
  # rules; expressions are compared token by token, never interpreted.

  # One alternative per token kind, tried in this order at each position.
  @token ~r/
      (?<space>\s+)
    | (?<comment>--[^\n\r]*|\/\*.*?\*\/)
    | (?<quoted>"(?:[^"]|"")+")
    | (?<string>[eE]'(?:[^'\\]|\\.|'')*'|'(?:[^']|'')*'|\$(?<tag>[A-Za-z_]*)\$.*?\$\k<tag>\$)
    | (?<word>[A-Za-z_\x{80}-\x{10FFFF}][A-Za-z0-9_$\x{80}-\x{10FFFF}]*)
    | (?<other>\S)
  /xsu

  @doc """
  The target a `TRANSFORM` statement names, as `name` or `schema.name`, or
  `:error` for any other statement.
  """
  @spec transform_name(String.t()) :: {:ok, String.t()} | :error
  def transform_name(statement) do
    case tokens(statement) do
      [{:ident, "transform"}, {:ident, schema}, {:other, "."}, {:ident, name} | _] ->
        {:ok, schema <> "." <> name}

      [{:ident, "transform"}, {:ident, name} | _] ->
        {:ok, name}

      _ ->
        :error
    end
  end

  @doc """
  Whether `definition` (a `Trellis.Definition`) is the transform `name`, as
  `transform_name/1` read it: its identifiers folded and unquoted, so it is
  compared with the definition's name read the same way (`"Odd Labels"` in
  quotes is the name `Odd Labels`), or with its `schema.table`.
  """
  @spec names?(Trellis.Definition.t(), String.t()) :: boolean
  def names?(definition, name) do
    unquoted =
      case tokens(definition.name) do
        [{:ident, ident}] -> ident
        _ -> nil
      end

    name in [unquoted, definition.target_table]
  end

  @doc """
  Whether two statements differ only in layout, comments, the case of
  keywords and plain identifiers, quotes an identifier does not need, an
  optional `AS` and a final `;`.
  """
  @spec same?(String.t(), String.t()) :: boolean
  def same?(a, b), do: comparable(a) == comparable(b)

  defp comparable(statement) do
    statement
    |> tokens()
    |> Enum.reject(&(&1 == {:ident, "as"}))
    |> drop_final_semicolon()
  end

  defp drop_final_semicolon(tokens) do
    case List.last(tokens) do
      {:other, ";"} -> List.delete_at(tokens, -1)
      _ -> tokens
    end
  end

  # Whitespace and comments dropped; a plain identifier folded as PostgreSQL
  # folds it (ASCII only) and a quoted one unescaped, so `price` and
  # `"price"` are one token and `"Price"` another.
  defp tokens(statement) do
    @token
    |> Regex.scan(statement, capture: [:quoted, :string, :word, :other])
    |> Enum.flat_map(fn
      [quoted, "", "", ""] when quoted != "" ->
        [{:ident, quoted |> String.slice(1..-2//1) |> String.replace(~s(""), ~s("))}]

      ["", string, "", ""] when string != "" ->
        [{:string, string}]

      ["", "", word, ""] when word != "" ->
        [{:ident, String.downcase(word, :ascii)}]

      ["", "", "", other] when other != "" ->
        [{:other, other}]

      _space_or_comment ->
        []
    end)
  end
end
