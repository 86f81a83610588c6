defmodule Trellis.Test.Tpch do
  @moduledoc false

  # A TPC-H-derived database of our own, small enough for the suite: the
  # eight tables with TPC-H's columns and key shapes (lineitem keyed by
  # order and line, partsupp by part and supplier), values drawn from
  # TPC-H's domains (segments, priorities, ship modes, part types and
  # containers, nations in their regions, phone numbers whose first two
  # digits are the nation's code), and the refresh rounds: new orders with
  # their lineitems, orders deleted with theirs, and updates to every other
  # table that move rows between groups, join matches and the queries'
  # filters. Not TPC-H's generator (dbgen) and not its sizes: a derived
  # workload, seeded, so a failing round replays.

  alias Trellis.Test.{SimplePG, Writers}

  @regions ["AFRICA", "AMERICA", "ASIA", "EUROPE", "MIDDLE EAST"]
  @nations [
    {"ALGERIA", 0},
    {"ARGENTINA", 1},
    {"BRAZIL", 1},
    {"CANADA", 1},
    {"EGYPT", 4},
    {"ETHIOPIA", 0},
    {"FRANCE", 3},
    {"GERMANY", 3},
    {"INDIA", 2},
    {"INDONESIA", 2},
    {"IRAN", 4},
    {"IRAQ", 4},
    {"JAPAN", 2},
    {"JORDAN", 4},
    {"KENYA", 0},
    {"MOROCCO", 0},
    {"MOZAMBIQUE", 0},
    {"PERU", 1},
    {"CHINA", 2},
    {"ROMANIA", 3},
    {"SAUDI ARABIA", 4},
    {"VIETNAM", 2},
    {"RUSSIA", 3},
    {"UNITED KINGDOM", 3},
    {"UNITED STATES", 1}
  ]
  @segments ~w(AUTOMOBILE BUILDING FURNITURE MACHINERY HOUSEHOLD)
  @priorities ["1-URGENT", "2-HIGH", "3-MEDIUM", "4-NOT SPECIFIED", "5-LOW"]
  @modes ["REG AIR", "AIR", "RAIL", "SHIP", "TRUCK", "MAIL", "FOB"]
  @instructions ["DELIVER IN PERSON", "COLLECT COD", "NONE", "TAKE BACK RETURN"]
  @type_words [
    ~w(STANDARD SMALL MEDIUM LARGE ECONOMY PROMO),
    ~w(ANODIZED BURNISHED PLATED POLISHED BRUSHED),
    ~w(TIN NICKEL BRASS STEEL COPPER)
  ]
  @container_words [~w(SM LG MED JUMBO WRAP), ~w(CASE BOX BAG JAR PKG PACK CAN DRUM)]
  @colors ~w(almond azure blue chocolate forest green lavender navy olive red)

  @suppliers 20
  @parts 200
  @customers 150
  @orders 1000

  @doc "The tables, filled; the seed draws every value."
  @spec create!(SimplePG.t(), integer) :: :ok
  def create!(pg, seed) do
    SimplePG.query!(pg, """
    CREATE TABLE region (r_regionkey int PRIMARY KEY, r_name text NOT NULL, r_comment text);
    CREATE TABLE nation (n_nationkey int PRIMARY KEY, n_name text NOT NULL,
      n_regionkey int NOT NULL, n_comment text);
    CREATE TABLE supplier (s_suppkey int PRIMARY KEY, s_name text NOT NULL, s_address text,
      s_nationkey int NOT NULL, s_phone text NOT NULL, s_acctbal numeric(15,2) NOT NULL,
      s_comment text NOT NULL);
    CREATE TABLE part (p_partkey int PRIMARY KEY, p_name text NOT NULL, p_mfgr text,
      p_brand text NOT NULL, p_type text NOT NULL, p_size int NOT NULL,
      p_container text NOT NULL, p_retailprice numeric(15,2) NOT NULL, p_comment text);
    CREATE TABLE partsupp (ps_partkey int, ps_suppkey int, ps_availqty int NOT NULL,
      ps_supplycost numeric(15,2) NOT NULL, ps_comment text,
      PRIMARY KEY (ps_partkey, ps_suppkey));
    CREATE TABLE customer (c_custkey int PRIMARY KEY, c_name text NOT NULL, c_address text,
      c_nationkey int NOT NULL, c_phone text NOT NULL, c_acctbal numeric(15,2) NOT NULL,
      c_mktsegment text NOT NULL, c_comment text);
    CREATE TABLE orders (o_orderkey bigint PRIMARY KEY, o_custkey int NOT NULL,
      o_orderstatus text NOT NULL, o_totalprice numeric(15,2) NOT NULL, o_orderdate date NOT NULL,
      o_orderpriority text NOT NULL, o_clerk text, o_shippriority int NOT NULL, o_comment text);
    CREATE TABLE lineitem (l_orderkey bigint, l_partkey int NOT NULL, l_suppkey int NOT NULL,
      l_linenumber int, l_quantity numeric(15,2) NOT NULL, l_extendedprice numeric(15,2) NOT NULL,
      l_discount numeric(15,2) NOT NULL, l_tax numeric(15,2) NOT NULL, l_returnflag text NOT NULL,
      l_linestatus text NOT NULL, l_shipdate date NOT NULL, l_commitdate date NOT NULL,
      l_receiptdate date NOT NULL, l_shipinstruct text NOT NULL, l_shipmode text NOT NULL,
      l_comment text, PRIMARY KEY (l_orderkey, l_linenumber));
    CREATE INDEX ON lineitem (l_partkey);
    CREATE INDEX ON orders (o_custkey);
    CREATE SEQUENCE tpch_orderkey START #{@orders + 1};
    """)

    SimplePG.query!(pg, "SELECT setseed(#{rem(abs(seed), 1000) / 1000})")

    SimplePG.query!(pg, """
    INSERT INTO region SELECT i - 1, r, 'region ' || i FROM unnest(#{array(@regions)}) WITH ORDINALITY AS x(r, i);
    INSERT INTO nation SELECT i - 1, n, k, 'nation ' || i
      FROM unnest(#{array(Enum.map(@nations, &elem(&1, 0)))}, #{int_array(Enum.map(@nations, &elem(&1, 1)))})
      WITH ORDINALITY AS x(n, k, i);
    INSERT INTO supplier SELECT g, 'Supplier#' || g, 'address ' || g, (random() * 24)::int,
      '', round((random() * 10999 - 999)::numeric, 2),
      CASE WHEN g % 7 = 0 THEN 'slyly Customer careful Complaints' ELSE 'regular deposits' END
      FROM generate_series(1, #{@suppliers}) g;
    UPDATE supplier SET s_phone = (s_nationkey + 10) || '-' || (100 + s_suppkey) || '-555-0100';
    INSERT INTO part SELECT g, #{pick(@colors)} || ' ' || #{pick(@colors)}, 'Manufacturer#' || (1 + g % 5),
      'Brand#' || (1 + g % 5) || (1 + (g / 5) % 5),
      #{pick(Enum.at(@type_words, 0))} || ' ' || #{pick(Enum.at(@type_words, 1))} || ' ' || #{pick(Enum.at(@type_words, 2))},
      1 + (random() * 49)::int,
      #{pick(Enum.at(@container_words, 0))} || ' ' || #{pick(Enum.at(@container_words, 1))},
      (900 + g % 200 + (g % 10) * 0.01)::numeric(15,2), 'part ' || g
      FROM generate_series(1, #{@parts}) g;
    INSERT INTO partsupp SELECT p, ((p + i * 5) % #{@suppliers}) + 1, 1 + (random() * 9998)::int,
      round((1 + random() * 999)::numeric, 2), 'partsupp'
      FROM generate_series(1, #{@parts}) p, generate_series(0, 3) i;
    INSERT INTO customer SELECT g, 'Customer#' || g, 'address ' || g, n, (n + 10) || '-' || (200 + g) || '-555-0199',
      round((random() * 10999 - 999)::numeric, 2), #{pick(@segments)}, 'customer ' || g
      FROM (SELECT g, (random() * 24)::int AS n FROM generate_series(1, #{@customers}) g) c;
    INSERT INTO orders SELECT g, #{custkey_sql()}, 'O', 0, d, #{pick(@priorities)},
      'Clerk#' || (1 + g % 50), 0, 'order ' || g
      FROM (SELECT g, '1992-01-01'::date + (random() * 2405)::int AS d
            FROM generate_series(1, #{@orders}) g) o;
    INSERT INTO lineitem #{lineitems_sql("orders")};
    """)

    :ok
  end

  # Lineitems for every order of `orders` (a table or CTE with o_orderkey
  # and o_orderdate): 1 to 7 each, dates, flags and prices as TPC-H derives
  # them (the return flag and line status from the dates; the price from
  # the part's).
  defp lineitems_sql(orders) do
    """
    SELECT o_orderkey, p, ((p + s * 5) % #{@suppliers}) + 1, n, q, q * (900 + p % 200 + (p % 10) * 0.01),
      round((random() * 0.10)::numeric, 2), round((random() * 0.08)::numeric, 2),
      CASE WHEN r > '1995-06-17' THEN 'N' WHEN random() < 0.5 THEN 'R' ELSE 'A' END,
      CASE WHEN sd > '1995-06-17' THEN 'O' ELSE 'F' END, sd, cd, r,
      #{pick(@instructions)}, #{pick(@modes)}, 'line'
    FROM (SELECT o_orderkey, n, p, s, q, sd, cd, sd + 1 + (random() * 29)::int AS r
          FROM (SELECT o.o_orderkey, n, 1 + (random() * #{@parts - 1})::int AS p,
                       (random() * 3)::int AS s, (1 + (random() * 49)::int)::numeric AS q,
                       o.o_orderdate + 1 + (random() * 120)::int AS sd,
                       o.o_orderdate + 30 + (random() * 60)::int AS cd
                FROM #{orders} o, generate_series(1, 1 + (o.o_orderkey * 7 + 3) % 7) n) a) b
    """
  end

  # A customer key: none of one customer in three, as TPC-H leaves a third
  # of its customers without orders.
  defp custkey_sql,
    do: "((1 + (random() * #{div(@customers, 3) - 1})::int) * 3 - 1 - (random())::int)"

  defp pick(words), do: "(#{array(words)})[1 + floor(random() * #{length(words)})::int]"

  defp array(words),
    do: "ARRAY[" <> Enum.map_join(words, ", ", &("'" <> &1 <> "'")) <> "]::text[]"

  defp int_array(ints), do: "ARRAY[" <> Enum.map_join(ints, ", ", &to_string/1) <> "]::int[]"

  @doc """
  One refresh round's writers, started: `count` tasks on connections of
  their own, each making `statements` writes drawn from new orders with
  their lineitems, deleted orders with theirs, and updates of lineitems,
  orders, customers, suppliers, parts, partsupp and nations. Each returns
  how many of its writes committed.
  """
  @spec start_round(String.t(), integer, pos_integer, pos_integer) :: [Task.t()]
  def start_round(url, seed, count, statements) do
    for w <- 1..count do
      Task.async(fn -> Writers.run(url, {seed, w, 41}, statements, &statement/0) end)
    end
  end

  defp statement do
    order = :rand.uniform(@orders + 200)
    customer = :rand.uniform(@customers)
    part = :rand.uniform(@parts)

    case :rand.uniform(100) do
      n when n <= 14 ->
        """
        WITH o AS (INSERT INTO orders SELECT nextval('tpch_orderkey'), #{custkey_sql()}, 'O', 0,
          '1992-01-01'::date + (random() * 2405)::int, #{pick(@priorities)}, 'Clerk#1', 0, 'new'
          FROM generate_series(1, #{:rand.uniform(3)}) RETURNING o_orderkey, o_orderdate)
        INSERT INTO lineitem #{lineitems_sql("o")}
        """

      n when n <= 26 ->
        "BEGIN; DELETE FROM lineitem WHERE l_orderkey = #{order}; " <>
          "DELETE FROM orders WHERE o_orderkey = #{order}; COMMIT"

      n when n <= 40 ->
        "UPDATE lineitem SET l_quantity = #{:rand.uniform(50)}, " <>
          "l_extendedprice = #{:rand.uniform(50)} * (900 + l_partkey % 200 + (l_partkey % 10) * 0.01), " <>
          "l_discount = #{:rand.uniform(11) - 1} / 100.0 " <>
          "WHERE l_orderkey = #{order} AND l_linenumber <= #{:rand.uniform(4)}"

      n when n <= 48 ->
        days = :rand.uniform(121) - 61

        "UPDATE lineitem SET l_shipdate = l_shipdate + #{days}, l_receiptdate = l_receiptdate + #{days}, " <>
          "l_returnflag = #{pick(~w(R A N))}, l_shipmode = #{pick(@modes)} " <>
          "WHERE l_orderkey = #{order}"

      n when n <= 54 ->
        "UPDATE lineitem SET l_partkey = #{part}, l_suppkey = ((#{part} + #{:rand.uniform(4) - 1} * 5) % #{@suppliers}) + 1 " <>
          "WHERE l_orderkey = #{order} AND l_linenumber = 1"

      n when n <= 62 ->
        "UPDATE orders SET o_orderpriority = #{pick(@priorities)}, " <>
          "o_orderdate = o_orderdate + #{:rand.uniform(181) - 91} WHERE o_orderkey = #{order}"

      n when n <= 68 ->
        "UPDATE orders SET o_custkey = #{customer} WHERE o_orderkey = #{order}"

      n when n <= 78 ->
        "UPDATE customer SET c_acctbal = round((random() * 10999 - 999)::numeric, 2), " <>
          "c_mktsegment = #{pick(@segments)} WHERE c_custkey = #{customer}"

      n when n <= 83 ->
        nation = :rand.uniform(25) - 1

        "UPDATE customer SET c_nationkey = #{nation}, " <>
          "c_phone = '#{nation + 10}' || substr(c_phone, 3) WHERE c_custkey = #{customer}"

      n when n <= 88 ->
        supplier = :rand.uniform(@suppliers)

        "UPDATE supplier SET s_nationkey = #{:rand.uniform(25) - 1}, s_comment = " <>
          "#{pick(["slyly Customer careful Complaints", "regular deposits"])} WHERE s_suppkey = #{supplier}"

      n when n <= 94 ->
        "UPDATE part SET p_brand = 'Brand#' || #{:rand.uniform(5)} || #{:rand.uniform(5)}, " <>
          "p_type = #{pick(Enum.at(@type_words, 0))} || ' ' || #{pick(Enum.at(@type_words, 1))} || ' ' || " <>
          "#{pick(Enum.at(@type_words, 2))}, p_size = #{:rand.uniform(50)}, " <>
          "p_container = #{pick(Enum.at(@container_words, 0))} || ' ' || #{pick(Enum.at(@container_words, 1))}, " <>
          "p_name = #{pick(@colors)} || ' ' || #{pick(@colors)} WHERE p_partkey = #{part}"

      n when n <= 98 ->
        "UPDATE partsupp SET ps_supplycost = round((1 + random() * 999)::numeric, 2) " <>
          "WHERE ps_partkey = #{part}"

      _ ->
        "UPDATE nation SET n_regionkey = #{:rand.uniform(5) - 1} WHERE n_nationkey = #{:rand.uniform(25) - 1}"
    end
  end
end
