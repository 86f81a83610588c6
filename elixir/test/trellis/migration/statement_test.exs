defmodule Trellis.Migration.StatementTest do
  # The statement comparison behind Trellis.Migration's `if_not_defined:`
  # guard. The guard's run through Ecto is in elixir/examples/ecto_app.
  use ExUnit.Case, async: true

  alias Trellis.Migration.Statement

  describe "transform_name/1" do
    test "reads the target a TRANSFORM names, folded as PostgreSQL folds it" do
      assert Statement.transform_name("TRANSFORM widget_prices FROM w SELECT a AS a") ==
               {:ok, "widget_prices"}

      assert Statement.transform_name("  -- why\n transform /* c */ Widget_Prices from w") ==
               {:ok, "widget_prices"}

      assert Statement.transform_name(~s(TRANSFORM "Odd""Name" FROM w)) == {:ok, ~s(Odd"Name)}

      assert Statement.transform_name("TRANSFORM reports.totals FROM w") ==
               {:ok, "reports.totals"}
    end

    test "is :error for any other statement" do
      assert Statement.transform_name("PAUSE TRANSFORM widget_prices") == :error
      assert Statement.transform_name("DROP TRANSFORM widget_prices") == :error
      assert Statement.transform_name("") == :error
    end
  end

  describe "names?/2" do
    # A Trellis.Definition as Trellis.definitions/1 lists it: the name in the
    # form statements take, the target table as the catalog holds it.
    defp definition(name, target_table),
      do: %Trellis.Definition{name: name, target_table: target_table}

    test "matches the name a TRANSFORM states against the definition's, quoted or not" do
      plain = definition("widget_prices", "public.widget_prices")
      odd = definition(~s("Odd Labels"), "public.Odd Labels")

      for {statement, definition} <- [
            {"TRANSFORM widget_prices FROM w", plain},
            {"TRANSFORM Widget_Prices FROM w", plain},
            {"TRANSFORM public.widget_prices FROM w", plain},
            {~s(TRANSFORM "Odd Labels" FROM w), odd},
            {~s(TRANSFORM public."Odd Labels" FROM w), odd}
          ] do
        {:ok, name} = Statement.transform_name(statement)
        assert Statement.names?(definition, name), "#{statement} does not name #{definition.name}"
      end
    end

    test "tells apart names PostgreSQL tells apart" do
      {:ok, name} = Statement.transform_name("TRANSFORM odd_labels FROM w")
      refute Statement.names?(definition(~s("Odd Labels"), "public.Odd Labels"), name)
      {:ok, name} = Statement.transform_name(~s(TRANSFORM "Widget_Prices" FROM w))
      refute Statement.names?(definition("widget_prices", "public.widget_prices"), name)
      {:ok, name} = Statement.transform_name("TRANSFORM app.widget_prices FROM w")
      refute Statement.names?(definition("widget_prices", "public.widget_prices"), name)
    end
  end

  describe "same?/2" do
    # The engine's canonical form of the statement, as Trellis.definitions/1 lists it.
    @canonical ~s(TRANSFORM widget_prices FROM widgets AS w SELECT w.price*2 AS "Price" WHERE price > 0)

    test "ignores layout, comments, keyword case, optional AS and a final semicolon" do
      written = """
      transform  Widget_Prices   -- doubled
        from widgets w /* alias */
        select w.price*2   as "Price"
        where price > 0 ;
      """

      assert Statement.same?(@canonical, written)

      assert Statement.same?(
               ~s(TRANSFORM t FROM s SELECT a AS "a"),
               "TRANSFORM t FROM s SELECT a AS a"
             )
    end

    test "tells apart what PostgreSQL tells apart" do
      refute Statement.same?(@canonical, String.replace(@canonical, "*2", "*3"))
      refute Statement.same?(@canonical, String.replace(@canonical, ~s("Price"), "Price"))
      refute Statement.same?(@canonical, String.replace(@canonical, "> 0", ">= 0"))

      refute Statement.same?(
               @canonical,
               String.replace(@canonical, "FROM widgets", "FROM gadgets")
             )
    end

    test "compares string literals as written, quotes and escapes included" do
      base = "TRANSFORM t FROM s SELECT a AS a WHERE b = "
      assert Statement.same?(base <> "'It''s'", base <> "'It''s'")
      refute Statement.same?(base <> "'It''s'", base <> "'it''s'")
      refute Statement.same?(base <> ~S(E'\' ABC'), base <> ~S(E'\' abc'))
      refute Statement.same?(base <> "$q$ ABC $q$", base <> "$q$ abc $q$")
    end
  end
end
