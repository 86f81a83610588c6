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

  @revenue "l.l_extendedprice * (1 - l.l_discount)"

  @queries [
    {"tpch_q1",
     "TRANSFORM tpch_q1 FROM lineitem l SELECT l.l_returnflag, l.l_linestatus, " <>
       "sum(l.l_quantity) AS sum_qty, sum(l.l_extendedprice) AS sum_base_price, " <>
       "sum(#{@revenue}) AS sum_disc_price, sum(#{@revenue} * (1 + l.l_tax)) AS sum_charge, " <>
       "avg(l.l_quantity) AS avg_qty, avg(l.l_extendedprice) AS avg_price, " <>
       "avg(l.l_discount) AS avg_disc, count(*) AS count_order " <>
       "WHERE l.l_shipdate <= '1998-09-02'::date GROUP BY l.l_returnflag, l.l_linestatus",
     "l_returnflag, l_linestatus, sum_qty, sum_base_price, sum_disc_price, sum_charge, " <>
       "avg_qty, avg_price, avg_disc, count_order",
     "SELECT l_returnflag, l_linestatus, sum(l_quantity), sum(l_extendedprice), " <>
       "sum(l_extendedprice * (1 - l_discount)), " <>
       "sum(l_extendedprice * (1 - l_discount) * (1 + l_tax)), avg(l_quantity), " <>
       "avg(l_extendedprice), avg(l_discount), count(*) FROM lineitem " <>
       "WHERE l_shipdate <= '1998-09-02'::date GROUP BY l_returnflag, l_linestatus"},
    {"tpch_q2",
     "TRANSFORM tpch_q2 FROM partsupp ps JOIN part p ON ps.ps_partkey = p.p_partkey " <>
       "JOIN supplier s ON ps.ps_suppkey = s.s_suppkey JOIN nation n ON s.s_nationkey = n.n_nationkey " <>
       "JOIN region r ON n.n_regionkey = r.r_regionkey " <>
       "SELECT s.s_acctbal, s.s_name, n.n_name, p.p_partkey, p.p_mfgr, s.s_address, s.s_phone, " <>
       "s.s_comment WHERE p.p_size BETWEEN 1 AND 25 AND p.p_type LIKE '%BRASS' " <>
       "AND r.r_name = 'EUROPE' AND ps.ps_supplycost = (SELECT min(x.ps_supplycost) " <>
       "FROM partsupp x JOIN supplier y ON x.ps_suppkey = y.s_suppkey " <>
       "JOIN nation m ON y.s_nationkey = m.n_nationkey JOIN region z ON m.n_regionkey = z.r_regionkey " <>
       "WHERE x.ps_partkey = p.p_partkey AND z.r_name = 'EUROPE')",
     "s_acctbal, s_name, n_name, p_partkey, p_mfgr, s_address, s_phone, s_comment",
     "SELECT s_acctbal, s_name, n_name, p_partkey, p_mfgr, s_address, s_phone, s_comment " <>
       "FROM part, supplier, partsupp, nation, region WHERE p_partkey = ps_partkey " <>
       "AND s_suppkey = ps_suppkey AND p_size BETWEEN 1 AND 25 AND p_type LIKE '%BRASS' " <>
       "AND s_nationkey = n_nationkey AND n_regionkey = r_regionkey AND r_name = 'EUROPE' " <>
       "AND ps_supplycost = (SELECT min(ps_supplycost) FROM partsupp, supplier, nation, region " <>
       "WHERE p_partkey = ps_partkey AND s_suppkey = ps_suppkey AND s_nationkey = n_nationkey " <>
       "AND n_regionkey = r_regionkey AND r_name = 'EUROPE')"},
    {"tpch_q3",
     "TRANSFORM tpch_q3 FROM lineitem l JOIN orders o ON l.l_orderkey = o.o_orderkey " <>
       "JOIN customer c ON o.o_custkey = c.c_custkey " <>
       "SELECT l.l_orderkey, sum(#{@revenue}) AS revenue, o.o_orderdate, o.o_shippriority " <>
       "WHERE c.c_mktsegment = 'BUILDING' AND o.o_orderdate < '1995-03-15'::date " <>
       "AND l.l_shipdate > '1995-03-15'::date " <>
       "GROUP BY l.l_orderkey, o.o_orderdate, o.o_shippriority",
     "l_orderkey, revenue, o_orderdate, o_shippriority",
     "SELECT l_orderkey, sum(l_extendedprice * (1 - l_discount)), o_orderdate, o_shippriority " <>
       "FROM customer, orders, lineitem WHERE c_mktsegment = 'BUILDING' " <>
       "AND c_custkey = o_custkey AND l_orderkey = o_orderkey " <>
       "AND o_orderdate < '1995-03-15'::date AND l_shipdate > '1995-03-15'::date " <>
       "GROUP BY l_orderkey, o_orderdate, o_shippriority"},
    {"tpch_q4",
     "TRANSFORM tpch_q4 FROM orders o SELECT o.o_orderpriority, count(*) AS order_count " <>
       "WHERE o.o_orderdate >= '1993-07-01'::date AND o.o_orderdate < '1994-07-01'::date " <>
       "AND EXISTS (SELECT 1 FROM lineitem l WHERE l.l_orderkey = o.o_orderkey " <>
       "AND l.l_commitdate < l.l_receiptdate) GROUP BY o.o_orderpriority",
     "o_orderpriority, order_count",
     "SELECT o_orderpriority, count(*) FROM orders " <>
       "WHERE o_orderdate >= '1993-07-01'::date AND o_orderdate < '1994-07-01'::date " <>
       "AND EXISTS (SELECT * FROM lineitem WHERE l_orderkey = o_orderkey " <>
       "AND l_commitdate < l_receiptdate) GROUP BY o_orderpriority"},
    {"tpch_q5",
     "TRANSFORM tpch_q5 FROM lineitem l JOIN orders o ON l.l_orderkey = o.o_orderkey " <>
       "JOIN customer c ON o.o_custkey = c.c_custkey JOIN supplier s ON l.l_suppkey = s.s_suppkey " <>
       "JOIN nation n ON s.s_nationkey = n.n_nationkey JOIN region r ON n.n_regionkey = r.r_regionkey " <>
       "SELECT n.n_name, sum(#{@revenue}) AS revenue " <>
       "WHERE c.c_nationkey = s.s_nationkey AND r.r_name = 'ASIA' " <>
       "AND o.o_orderdate >= '1993-01-01'::date AND o.o_orderdate < '1997-01-01'::date " <>
       "GROUP BY n.n_name", "n_name, revenue",
     "SELECT n_name, sum(l_extendedprice * (1 - l_discount)) " <>
       "FROM customer, orders, lineitem, supplier, nation, region " <>
       "WHERE c_custkey = o_custkey AND l_orderkey = o_orderkey AND l_suppkey = s_suppkey " <>
       "AND c_nationkey = s_nationkey AND s_nationkey = n_nationkey " <>
       "AND n_regionkey = r_regionkey AND r_name = 'ASIA' " <>
       "AND o_orderdate >= '1993-01-01'::date AND o_orderdate < '1997-01-01'::date " <>
       "GROUP BY n_name"},
    {"tpch_q6",
     "TRANSFORM tpch_q6 FROM lineitem l SELECT sum(l.l_extendedprice * l.l_discount) AS revenue " <>
       "WHERE l.l_shipdate >= '1994-01-01'::date AND l.l_shipdate < '1995-01-01'::date " <>
       "AND l.l_discount BETWEEN 0.05 AND 0.07 AND l.l_quantity < 24", "revenue",
     "SELECT sum(l_extendedprice * l_discount) FROM lineitem " <>
       "WHERE l_shipdate >= '1994-01-01'::date AND l_shipdate < '1995-01-01'::date " <>
       "AND l_discount BETWEEN 0.05 AND 0.07 AND l_quantity < 24"},
    {"tpch_q7",
     "TRANSFORM tpch_q7 FROM lineitem l JOIN supplier s ON l.l_suppkey = s.s_suppkey " <>
       "JOIN orders o ON l.l_orderkey = o.o_orderkey JOIN customer c ON o.o_custkey = c.c_custkey " <>
       "JOIN nation n1 ON s.s_nationkey = n1.n_nationkey " <>
       "JOIN nation n2 ON c.c_nationkey = n2.n_nationkey " <>
       "SELECT n1.n_name AS supp_nation, n2.n_name AS cust_nation, " <>
       "date_part('year', l.l_shipdate) AS l_year, sum(#{@revenue}) AS revenue " <>
       "WHERE ((n1.n_regionkey = 3 AND n2.n_regionkey = 2) " <>
       "OR (n1.n_regionkey = 2 AND n2.n_regionkey = 3)) " <>
       "AND l.l_shipdate BETWEEN '1995-01-01'::date AND '1996-12-31'::date " <>
       "GROUP BY n1.n_name, n2.n_name, date_part('year', l.l_shipdate)",
     "supp_nation, cust_nation, l_year, revenue",
     "SELECT n1.n_name, n2.n_name, date_part('year', l_shipdate), " <>
       "sum(l_extendedprice * (1 - l_discount)) " <>
       "FROM supplier, lineitem, orders, customer, nation n1, nation n2 " <>
       "WHERE s_suppkey = l_suppkey AND o_orderkey = l_orderkey AND c_custkey = o_custkey " <>
       "AND s_nationkey = n1.n_nationkey AND c_nationkey = n2.n_nationkey " <>
       "AND ((n1.n_regionkey = 3 AND n2.n_regionkey = 2) " <>
       "OR (n1.n_regionkey = 2 AND n2.n_regionkey = 3)) " <>
       "AND l_shipdate BETWEEN '1995-01-01'::date AND '1996-12-31'::date " <>
       "GROUP BY n1.n_name, n2.n_name, date_part('year', l_shipdate)"},
    {"tpch_q8",
     "TRANSFORM tpch_q8 FROM lineitem l JOIN part p ON l.l_partkey = p.p_partkey " <>
       "JOIN supplier s ON l.l_suppkey = s.s_suppkey JOIN orders o ON l.l_orderkey = o.o_orderkey " <>
       "JOIN customer c ON o.o_custkey = c.c_custkey " <>
       "JOIN nation n1 ON c.c_nationkey = n1.n_nationkey " <>
       "JOIN region r ON n1.n_regionkey = r.r_regionkey " <>
       "JOIN nation n2 ON s.s_nationkey = n2.n_nationkey " <>
       "SELECT date_part('year', o.o_orderdate) AS o_year, " <>
       "sum(CASE WHEN n2.n_name = 'BRAZIL' THEN #{@revenue} ELSE 0 END) / sum(#{@revenue}) " <>
       "AS mkt_share " <>
       "WHERE r.r_name = 'AMERICA' " <>
       "AND o.o_orderdate BETWEEN '1995-01-01'::date AND '1996-12-31'::date " <>
       "AND p.p_type LIKE 'ECONOMY%' GROUP BY date_part('year', o.o_orderdate)",
     "o_year, mkt_share",
     "SELECT date_part('year', o_orderdate), " <>
       "sum(CASE WHEN n2.n_name = 'BRAZIL' THEN l_extendedprice * (1 - l_discount) ELSE 0 END) " <>
       "/ sum(l_extendedprice * (1 - l_discount)) " <>
       "FROM part, supplier, lineitem, orders, customer, nation n1, nation n2, region " <>
       "WHERE p_partkey = l_partkey AND s_suppkey = l_suppkey AND l_orderkey = o_orderkey " <>
       "AND o_custkey = c_custkey AND c_nationkey = n1.n_nationkey " <>
       "AND n1.n_regionkey = r_regionkey AND r_name = 'AMERICA' " <>
       "AND s_nationkey = n2.n_nationkey " <>
       "AND o_orderdate BETWEEN '1995-01-01'::date AND '1996-12-31'::date " <>
       "AND p_type LIKE 'ECONOMY%' GROUP BY date_part('year', o_orderdate)"},
    {"tpch_q9",
     "TRANSFORM tpch_q9 FROM lineitem l JOIN part p ON l.l_partkey = p.p_partkey " <>
       "JOIN supplier s ON l.l_suppkey = s.s_suppkey " <>
       "JOIN partsupp ps ON ps.ps_suppkey = l.l_suppkey AND ps.ps_partkey = l.l_partkey " <>
       "JOIN orders o ON l.l_orderkey = o.o_orderkey " <>
       "JOIN nation n ON s.s_nationkey = n.n_nationkey " <>
       "SELECT n.n_name AS nation, date_part('year', o.o_orderdate) AS o_year, " <>
       "sum(#{@revenue} - ps.ps_supplycost * l.l_quantity) AS sum_profit " <>
       "WHERE p.p_name LIKE '%green%' " <>
       "GROUP BY n.n_name, date_part('year', o.o_orderdate)", "nation, o_year, sum_profit",
     "SELECT n_name, date_part('year', o_orderdate), " <>
       "sum(l_extendedprice * (1 - l_discount) - ps_supplycost * l_quantity) " <>
       "FROM part, supplier, lineitem, partsupp, orders, nation " <>
       "WHERE s_suppkey = l_suppkey AND ps_suppkey = l_suppkey AND ps_partkey = l_partkey " <>
       "AND p_partkey = l_partkey AND o_orderkey = l_orderkey AND s_nationkey = n_nationkey " <>
       "AND p_name LIKE '%green%' GROUP BY n_name, date_part('year', o_orderdate)"},
    {"tpch_q10",
     "TRANSFORM tpch_q10 FROM lineitem l JOIN orders o ON l.l_orderkey = o.o_orderkey " <>
       "JOIN customer c ON o.o_custkey = c.c_custkey " <>
       "JOIN nation n ON c.c_nationkey = n.n_nationkey " <>
       "SELECT c.c_custkey, c.c_name, sum(#{@revenue}) AS revenue, c.c_acctbal, n.n_name, " <>
       "c.c_address, c.c_phone, c.c_comment " <>
       "WHERE o.o_orderdate >= '1993-10-01'::date AND o.o_orderdate < '1994-10-01'::date " <>
       "AND l.l_returnflag = 'R' " <>
       "GROUP BY c.c_custkey, c.c_name, c.c_acctbal, c.c_phone, n.n_name, c.c_address, " <>
       "c.c_comment",
     "c_custkey, c_name, revenue, c_acctbal, n_name, c_address, c_phone, c_comment",
     "SELECT c_custkey, c_name, sum(l_extendedprice * (1 - l_discount)), c_acctbal, n_name, " <>
       "c_address, c_phone, c_comment FROM customer, orders, lineitem, nation " <>
       "WHERE c_custkey = o_custkey AND l_orderkey = o_orderkey " <>
       "AND o_orderdate >= '1993-10-01'::date AND o_orderdate < '1994-10-01'::date " <>
       "AND l_returnflag = 'R' AND c_nationkey = n_nationkey " <>
       "GROUP BY c_custkey, c_name, c_acctbal, c_phone, n_name, c_address, c_comment"},
    {"tpch_q11",
     "TRANSFORM tpch_q11 FROM partsupp ps JOIN supplier s ON ps.ps_suppkey = s.s_suppkey " <>
       "JOIN nation n ON s.s_nationkey = n.n_nationkey " <>
       "SELECT ps.ps_partkey, sum(ps.ps_supplycost * ps.ps_availqty) AS value " <>
       "WHERE n.n_regionkey = 3 GROUP BY ps.ps_partkey " <>
       "HAVING sum(ps.ps_supplycost * ps.ps_availqty) > " <>
       "(SELECT sum(x.ps_supplycost * x.ps_availqty) * 0.005 FROM partsupp x " <>
       "JOIN supplier y ON x.ps_suppkey = y.s_suppkey JOIN nation z ON y.s_nationkey = z.n_nationkey " <>
       "WHERE z.n_regionkey = 3)", "ps_partkey, value",
     "SELECT ps_partkey, sum(ps_supplycost * ps_availqty) FROM partsupp, supplier, nation " <>
       "WHERE ps_suppkey = s_suppkey AND s_nationkey = n_nationkey AND n_regionkey = 3 " <>
       "GROUP BY ps_partkey HAVING sum(ps_supplycost * ps_availqty) > " <>
       "(SELECT sum(ps_supplycost * ps_availqty) * 0.005 FROM partsupp, supplier, nation " <>
       "WHERE ps_suppkey = s_suppkey AND s_nationkey = n_nationkey AND n_regionkey = 3)"},
    {"tpch_q12",
     "TRANSFORM tpch_q12 FROM lineitem l JOIN orders o ON l.l_orderkey = o.o_orderkey " <>
       "SELECT l.l_shipmode, " <>
       "sum(CASE WHEN o.o_orderpriority = '1-URGENT' OR o.o_orderpriority = '2-HIGH' " <>
       "THEN 1 ELSE 0 END) AS high_line_count, " <>
       "sum(CASE WHEN o.o_orderpriority <> '1-URGENT' AND o.o_orderpriority <> '2-HIGH' " <>
       "THEN 1 ELSE 0 END) AS low_line_count " <>
       "WHERE l.l_shipmode IN ('MAIL', 'SHIP') AND l.l_commitdate < l.l_receiptdate " <>
       "AND l.l_shipdate < l.l_commitdate AND l.l_receiptdate >= '1994-01-01'::date " <>
       "AND l.l_receiptdate < '1996-01-01'::date GROUP BY l.l_shipmode",
     "l_shipmode, high_line_count, low_line_count",
     "SELECT l_shipmode, " <>
       "sum(CASE WHEN o_orderpriority = '1-URGENT' OR o_orderpriority = '2-HIGH' " <>
       "THEN 1 ELSE 0 END), " <>
       "sum(CASE WHEN o_orderpriority <> '1-URGENT' AND o_orderpriority <> '2-HIGH' " <>
       "THEN 1 ELSE 0 END) FROM orders, lineitem WHERE o_orderkey = l_orderkey " <>
       "AND l_shipmode IN ('MAIL', 'SHIP') AND l_commitdate < l_receiptdate " <>
       "AND l_shipdate < l_commitdate AND l_receiptdate >= '1994-01-01'::date " <>
       "AND l_receiptdate < '1996-01-01'::date GROUP BY l_shipmode"},
    {"tpch_q13",
     "TRANSFORM tpch_q13 WITH plain AS (FROM orders o SELECT o.o_orderkey, o.o_custkey " <>
       "WHERE o.o_comment NOT LIKE '%special%requests%'), " <>
       "counts AS (FROM customer c LEFT JOIN plain p ON c.c_custkey = p.o_custkey " <>
       "SELECT c.c_custkey, count(p.o_orderkey) AS c_count GROUP BY c.c_custkey) " <>
       "FROM counts x SELECT x.c_count, count(*) AS custdist GROUP BY x.c_count",
     "c_count, custdist",
     "SELECT c_count, count(*) FROM (SELECT c_custkey, count(o_orderkey) FROM customer " <>
       "LEFT OUTER JOIN orders ON c_custkey = o_custkey " <>
       "AND o_comment NOT LIKE '%special%requests%' GROUP BY c_custkey) " <>
       "AS c_orders (c_custkey, c_count) GROUP BY c_count"},
    {"tpch_q14",
     "TRANSFORM tpch_q14 FROM lineitem l JOIN part p ON l.l_partkey = p.p_partkey " <>
       "SELECT 100.00 * sum(CASE WHEN p.p_type LIKE 'PROMO%' THEN #{@revenue} ELSE 0 END) " <>
       "/ sum(#{@revenue}) AS promo_revenue " <>
       "WHERE l.l_shipdate >= '1995-09-01'::date AND l.l_shipdate < '1996-09-01'::date",
     "promo_revenue",
     "SELECT 100.00 * sum(CASE WHEN p_type LIKE 'PROMO%' " <>
       "THEN l_extendedprice * (1 - l_discount) ELSE 0 END) " <>
       "/ sum(l_extendedprice * (1 - l_discount)) FROM lineitem, part " <>
       "WHERE l_partkey = p_partkey AND l_shipdate >= '1995-09-01'::date " <>
       "AND l_shipdate < '1996-09-01'::date"},
    {"tpch_q15",
     "TRANSFORM tpch_q15 WITH revenue0 AS (FROM lineitem l " <>
       "SELECT l.l_suppkey AS supplier_no, sum(#{@revenue}) AS total_revenue " <>
       "WHERE l.l_shipdate >= '1996-01-01'::date AND l.l_shipdate < '1996-07-01'::date " <>
       "GROUP BY l.l_suppkey) " <>
       "FROM supplier s JOIN revenue0 r ON s.s_suppkey = r.supplier_no " <>
       "SELECT s.s_suppkey, s.s_name, s.s_address, s.s_phone, r.total_revenue " <>
       "WHERE r.total_revenue = (SELECT max(x.total_revenue) FROM revenue0 x)",
     "s_suppkey, s_name, s_address, s_phone, total_revenue",
     "SELECT * FROM (WITH revenue0 AS (SELECT l_suppkey AS supplier_no, " <>
       "sum(l_extendedprice * (1 - l_discount)) AS total_revenue FROM lineitem " <>
       "WHERE l_shipdate >= '1996-01-01'::date AND l_shipdate < '1996-07-01'::date " <>
       "GROUP BY l_suppkey) SELECT s_suppkey, s_name, s_address, s_phone, total_revenue " <>
       "FROM supplier, revenue0 WHERE s_suppkey = supplier_no " <>
       "AND total_revenue = (SELECT max(total_revenue) FROM revenue0)) q15"},
    {"tpch_q16",
     "TRANSFORM tpch_q16 FROM partsupp ps JOIN part p ON ps.ps_partkey = p.p_partkey " <>
       "SELECT p.p_brand, p.p_type, p.p_size, count(DISTINCT ps.ps_suppkey) AS supplier_cnt " <>
       "WHERE p.p_brand <> 'Brand#45' AND p.p_type NOT LIKE 'MEDIUM POLISHED%' " <>
       "AND p.p_size IN (49, 14, 23, 45, 19, 3, 36, 9) " <>
       "AND ps.ps_suppkey NOT IN (SELECT s.s_suppkey FROM supplier s " <>
       "WHERE s.s_comment LIKE '%Customer%Complaints%') " <>
       "GROUP BY p.p_brand, p.p_type, p.p_size", "p_brand, p_type, p_size, supplier_cnt",
     "SELECT p_brand, p_type, p_size, count(DISTINCT ps_suppkey) FROM partsupp, part " <>
       "WHERE p_partkey = ps_partkey AND p_brand <> 'Brand#45' " <>
       "AND p_type NOT LIKE 'MEDIUM POLISHED%' AND p_size IN (49, 14, 23, 45, 19, 3, 36, 9) " <>
       "AND ps_suppkey NOT IN (SELECT s_suppkey FROM supplier " <>
       "WHERE s_comment LIKE '%Customer%Complaints%') GROUP BY p_brand, p_type, p_size"},
    {"tpch_q17",
     "TRANSFORM tpch_q17 FROM lineitem l JOIN part p ON l.l_partkey = p.p_partkey " <>
       "SELECT sum(l.l_extendedprice) / 7.0 AS avg_yearly " <>
       "WHERE p.p_brand LIKE 'Brand#2%' AND p.p_container LIKE 'MED%' " <>
       "AND l.l_quantity < (SELECT 0.2 * avg(x.l_quantity) FROM lineitem x " <>
       "WHERE x.l_partkey = p.p_partkey)", "avg_yearly",
     "SELECT sum(l_extendedprice) / 7.0 FROM lineitem, part WHERE p_partkey = l_partkey " <>
       "AND p_brand LIKE 'Brand#2%' AND p_container LIKE 'MED%' " <>
       "AND l_quantity < (SELECT 0.2 * avg(l_quantity) FROM lineitem " <>
       "WHERE l_partkey = p_partkey)"},
    {"tpch_q18",
     "TRANSFORM tpch_q18 WITH big AS (FROM lineitem x SELECT x.l_orderkey, " <>
       "sum(x.l_quantity) AS q GROUP BY x.l_orderkey HAVING sum(x.l_quantity) > 150) " <>
       "FROM lineitem l JOIN orders o ON l.l_orderkey = o.o_orderkey " <>
       "JOIN customer c ON o.o_custkey = c.c_custkey JOIN big b ON o.o_orderkey = b.l_orderkey " <>
       "SELECT c.c_name, c.c_custkey, o.o_orderkey, o.o_orderdate, o.o_totalprice, " <>
       "sum(l.l_quantity) AS quantity " <>
       "GROUP BY c.c_name, c.c_custkey, o.o_orderkey, o.o_orderdate, o.o_totalprice",
     "c_name, c_custkey, o_orderkey, o_orderdate, o_totalprice, quantity",
     "SELECT c_name, c_custkey, o_orderkey, o_orderdate, o_totalprice, sum(l_quantity) " <>
       "FROM customer, orders, lineitem WHERE o_orderkey IN (SELECT l_orderkey FROM lineitem " <>
       "GROUP BY l_orderkey HAVING sum(l_quantity) > 150) AND c_custkey = o_custkey " <>
       "AND o_orderkey = l_orderkey " <>
       "GROUP BY c_name, c_custkey, o_orderkey, o_orderdate, o_totalprice"},
    {"tpch_q19",
     "TRANSFORM tpch_q19 FROM lineitem l JOIN part p ON l.l_partkey = p.p_partkey " <>
       "SELECT sum(#{@revenue}) AS revenue " <>
       "WHERE l.l_shipmode IN ('AIR', 'REG AIR') AND l.l_shipinstruct = 'DELIVER IN PERSON' " <>
       "AND ((p.p_brand = 'Brand#12' AND p.p_container IN ('SM CASE', 'SM BOX', 'SM PACK', " <>
       "'SM PKG') AND l.l_quantity BETWEEN 1 AND 11 AND p.p_size BETWEEN 1 AND 5) " <>
       "OR (p.p_brand = 'Brand#23' AND p.p_container IN ('MED BAG', 'MED BOX', 'MED PKG', " <>
       "'MED PACK') AND l.l_quantity BETWEEN 10 AND 20 AND p.p_size BETWEEN 1 AND 10) " <>
       "OR (p.p_brand LIKE 'Brand#3%' AND l.l_quantity BETWEEN 20 AND 30 " <>
       "AND p.p_size BETWEEN 1 AND 30))", "revenue",
     "SELECT sum(l_extendedprice * (1 - l_discount)) FROM lineitem, part " <>
       "WHERE p_partkey = l_partkey AND l_shipmode IN ('AIR', 'REG AIR') " <>
       "AND l_shipinstruct = 'DELIVER IN PERSON' " <>
       "AND ((p_brand = 'Brand#12' AND p_container IN ('SM CASE', 'SM BOX', 'SM PACK', " <>
       "'SM PKG') AND l_quantity BETWEEN 1 AND 11 AND p_size BETWEEN 1 AND 5) " <>
       "OR (p_brand = 'Brand#23' AND p_container IN ('MED BAG', 'MED BOX', 'MED PKG', " <>
       "'MED PACK') AND l_quantity BETWEEN 10 AND 20 AND p_size BETWEEN 1 AND 10) " <>
       "OR (p_brand LIKE 'Brand#3%' AND l_quantity BETWEEN 20 AND 30 " <>
       "AND p_size BETWEEN 1 AND 30))"},
    {"tpch_q20",
     "TRANSFORM tpch_q20 FROM supplier s JOIN nation n ON s.s_nationkey = n.n_nationkey " <>
       "SELECT s.s_name, s.s_address WHERE n.n_regionkey IN (1, 3) " <>
       "AND s.s_suppkey IN (SELECT ps.ps_suppkey FROM partsupp ps WHERE ps.ps_partkey IN " <>
       "(SELECT p.p_partkey FROM part p WHERE p.p_name LIKE 'forest%' OR p.p_name LIKE 'green%') " <>
       "AND ps.ps_availqty > (SELECT 0.5 * sum(l.l_quantity) FROM lineitem l " <>
       "WHERE l.l_partkey = ps.ps_partkey AND l.l_suppkey = ps.ps_suppkey " <>
       "AND l.l_shipdate >= '1993-01-01'::date AND l.l_shipdate < '1997-01-01'::date))",
     "s_name, s_address",
     "SELECT s_name, s_address FROM supplier, nation WHERE s_suppkey IN (SELECT ps_suppkey " <>
       "FROM partsupp WHERE ps_partkey IN (SELECT p_partkey FROM part " <>
       "WHERE p_name LIKE 'forest%' OR p_name LIKE 'green%') " <>
       "AND ps_availqty > (SELECT 0.5 * sum(l_quantity) FROM lineitem WHERE l_partkey = ps_partkey " <>
       "AND l_suppkey = ps_suppkey AND l_shipdate >= '1993-01-01'::date " <>
       "AND l_shipdate < '1997-01-01'::date)) " <>
       "AND s_nationkey = n_nationkey AND n_regionkey IN (1, 3)"},
    {"tpch_q21",
     "TRANSFORM tpch_q21 FROM lineitem l1 JOIN supplier s ON l1.l_suppkey = s.s_suppkey " <>
       "JOIN orders o ON l1.l_orderkey = o.o_orderkey JOIN nation n ON s.s_nationkey = n.n_nationkey " <>
       "SELECT s.s_name, count(*) AS numwait WHERE o.o_orderstatus = 'O' " <>
       "AND l1.l_receiptdate > l1.l_commitdate AND EXISTS (SELECT 1 FROM lineitem l2 " <>
       "WHERE l2.l_orderkey = l1.l_orderkey AND l2.l_suppkey <> l1.l_suppkey) " <>
       "AND NOT EXISTS (SELECT 1 FROM lineitem l3 WHERE l3.l_orderkey = l1.l_orderkey " <>
       "AND l3.l_suppkey <> l1.l_suppkey AND l3.l_receiptdate > l3.l_commitdate) " <>
       "AND n.n_regionkey IN (2, 4) GROUP BY s.s_name", "s_name, numwait",
     "SELECT s_name, count(*) FROM supplier, lineitem l1, orders, nation " <>
       "WHERE s_suppkey = l1.l_suppkey AND o_orderkey = l1.l_orderkey AND o_orderstatus = 'O' " <>
       "AND l1.l_receiptdate > l1.l_commitdate AND EXISTS (SELECT * FROM lineitem l2 " <>
       "WHERE l2.l_orderkey = l1.l_orderkey AND l2.l_suppkey <> l1.l_suppkey) " <>
       "AND NOT EXISTS (SELECT * FROM lineitem l3 WHERE l3.l_orderkey = l1.l_orderkey " <>
       "AND l3.l_suppkey <> l1.l_suppkey AND l3.l_receiptdate > l3.l_commitdate) " <>
       "AND s_nationkey = n_nationkey AND n_regionkey IN (2, 4) GROUP BY s_name"},
    {"tpch_q22",
     "TRANSFORM tpch_q22 FROM customer c SELECT substr(c.c_phone, 1, 2) AS cntrycode, " <>
       "count(*) AS numcust, sum(c.c_acctbal) AS totacctbal " <>
       "WHERE substr(c.c_phone, 1, 2) IN ('13', '31', '23', '29', '30', '18', '17', '10', '11', '12') " <>
       "AND c.c_acctbal > (SELECT avg(x.c_acctbal) FROM customer x WHERE x.c_acctbal > 0.00 " <>
       "AND substr(x.c_phone, 1, 2) IN ('13', '31', '23', '29', '30', '18', '17', '10', '11', '12')) " <>
       "AND NOT EXISTS (SELECT 1 FROM orders o WHERE o.o_custkey = c.c_custkey) " <>
       "GROUP BY substr(c.c_phone, 1, 2)", "cntrycode, numcust, totacctbal",
     "SELECT substr(c_phone, 1, 2), count(*), sum(c_acctbal) FROM customer " <>
       "WHERE substr(c_phone, 1, 2) IN ('13', '31', '23', '29', '30', '18', '17', '10', '11', '12') " <>
       "AND c_acctbal > (SELECT avg(c_acctbal) FROM customer WHERE c_acctbal > 0.00 " <>
       "AND substr(c_phone, 1, 2) IN ('13', '31', '23', '29', '30', '18', '17', '10', '11', '12')) " <>
       "AND NOT EXISTS (SELECT * FROM orders WHERE o_custkey = c_custkey) " <>
       "GROUP BY substr(c_phone, 1, 2)"}
  ]

  @doc """
  TPC-H's queries that one TRANSFORM statement expresses, as `{name,
  statement, columns, query}`: the target's name, the statement, the
  target's columns compared, and the SQL they equal (TPC-H's text with
  ORDER BY and LIMIT dropped and the constants widened, as the statement).
  """
  @spec queries() :: [{String.t(), String.t(), String.t(), String.t()}]
  def queries, do: @queries

  # The suite's size; a benchmark asks for more orders, and the other
  # tables grow with them in TPC-H's proportions (at scale 1: 1.5M orders,
  # 150k customers, 200k parts, 10k suppliers), never below these.
  @orders 1000

  @doc "How many rows of each table a database of `orders` orders has."
  @spec sizes(pos_integer) :: %{atom => pos_integer}
  def sizes(orders) do
    %{
      orders: orders,
      customers: max(150, div(orders, 10)),
      parts: max(200, div(orders * 2, 15)),
      suppliers: max(20, div(orders, 150))
    }
  end

  @doc "The tables, filled with `orders` orders (see sizes/1); the seed draws every value."
  @spec create!(SimplePG.t(), integer, pos_integer) :: :ok
  def create!(pg, seed, orders \\ @orders) do
    size = sizes(orders)

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
    CREATE SEQUENCE tpch_orderkey START #{size.orders + 1};
    """)

    SimplePG.query!(pg, "SELECT setseed(#{rem(abs(seed), 1000) / 1000})")

    SimplePG.query!(pg, """
    INSERT INTO region SELECT i - 1, r, 'region ' || i FROM unnest(#{array(@regions)}) WITH ORDINALITY AS x(r, i);
    INSERT INTO nation SELECT i - 1, n, k, 'nation ' || i
      FROM unnest(#{array(Enum.map(@nations, &elem(&1, 0)))}, #{int_array(Enum.map(@nations, &elem(&1, 1)))})
      WITH ORDINALITY AS x(n, k, i);
    INSERT INTO supplier SELECT g, 'Supplier#' || g, 'address ' || g, g % 25,
      '', round((random() * 10999 - 999)::numeric, 2),
      CASE WHEN g % 7 = 0 THEN 'slyly Customer careful Complaints' ELSE 'regular deposits' END
      FROM generate_series(1, #{size.suppliers}) g;
    UPDATE supplier SET s_phone = (s_nationkey + 10) || '-' || (100 + s_suppkey) || '-555-0100';
    INSERT INTO part SELECT g, #{pick(@colors)} || ' ' || #{pick(@colors)}, 'Manufacturer#' || (1 + g % 5),
      'Brand#' || (1 + g % 5) || (1 + (g / 5) % 5),
      #{pick(Enum.at(@type_words, 0))} || ' ' || #{pick(Enum.at(@type_words, 1))} || ' ' || #{pick(Enum.at(@type_words, 2))},
      1 + (random() * 49)::int,
      #{pick(Enum.at(@container_words, 0))} || ' ' || #{pick(Enum.at(@container_words, 1))},
      (900 + g % 200 + (g % 10) * 0.01)::numeric(15,2), 'part ' || g
      FROM generate_series(1, #{size.parts}) g;
    INSERT INTO partsupp SELECT p, ((p + i * #{stride(size)}) % #{size.suppliers}) + 1,
      1 + (random() * 9998)::int, round((1 + random() * 999)::numeric, 2), 'partsupp'
      FROM generate_series(1, #{size.parts}) p, generate_series(0, 3) i;
    INSERT INTO customer SELECT g, 'Customer#' || g, 'address ' || g, n, (n + 10) || '-' || (200 + g) || '-555-0199',
      round((random() * 10999 - 999)::numeric, 2), #{pick(@segments)}, 'customer ' || g
      FROM (SELECT g, (random() * 24)::int AS n FROM generate_series(1, #{size.customers}) g) c;
    INSERT INTO orders SELECT g, #{custkey_sql(size)}, 'O', 0, d, #{pick(@priorities)},
      'Clerk#' || (1 + g % 50), 0, #{comment_sql()}
      FROM (SELECT g, '1992-01-01'::date + (random() * 2405)::int AS d
            FROM generate_series(1, #{size.orders}) g) o;
    INSERT INTO lineitem #{lineitems_sql("orders", size)};
    ANALYZE;
    """)

    :ok
  end

  # Lineitems for every order of `orders` (a table or CTE with o_orderkey
  # and o_orderdate): 1 to 7 each, dates, flags and prices as TPC-H derives
  # them (the return flag and line status from the dates; the price from
  # the part's).
  defp lineitems_sql(orders, size) do
    """
    SELECT o_orderkey, p, ((p + s * #{stride(size)}) % #{size.suppliers}) + 1, n, q,
      q * (900 + p % 200 + (p % 10) * 0.01),
      round((random() * 0.10)::numeric, 2), round((random() * 0.08)::numeric, 2),
      CASE WHEN r > '1995-06-17' THEN 'N' WHEN random() < 0.5 THEN 'R' ELSE 'A' END,
      CASE WHEN sd > '1995-06-17' THEN 'O' ELSE 'F' END, sd, cd, r,
      #{pick(@instructions)}, #{pick(@modes)}, 'line'
    FROM (SELECT o_orderkey, n, p, s, q, sd, cd, sd + 1 + (random() * 29)::int AS r
          FROM (SELECT o.o_orderkey, n, 1 + (random() * #{size.parts - 1})::int AS p,
                       (random() * 3)::int AS s, (1 + (random() * 49)::int)::numeric AS q,
                       o.o_orderdate + 1 + (random() * 120)::int AS sd,
                       o.o_orderdate + 30 + (random() * 60)::int AS cd
                FROM #{orders} o, generate_series(1, 1 + (o.o_orderkey * 7 + 3) % 7) n) a) b
    """
  end

  # A customer key: none of one customer in three, as TPC-H leaves a third
  # of its customers without orders.
  defp custkey_sql(size),
    do: "((1 + (random() * #{div(size.customers, 3) - 1})::int) * 3 - 1 - (random())::int)"

  # An order's comment: one in ten mentions special requests (Q13 leaves
  # those orders out).
  defp comment_sql,
    do: "CASE WHEN random() < 0.1 THEN 'careful special deposit requests' ELSE 'plain' END"

  # A part's four suppliers are this far apart, so that they differ.
  defp stride(size), do: div(size.suppliers, 4)

  defp pick(words), do: "(#{array(words)})[1 + floor(random() * #{length(words)})::int]"

  defp array(words),
    do: "ARRAY[" <> Enum.map_join(words, ", ", &("'" <> &1 <> "'")) <> "]::text[]"

  defp int_array(ints), do: "ARRAY[" <> Enum.map_join(ints, ", ", &to_string/1) <> "]::int[]"

  @doc """
  TPC-H's refresh functions, in one transaction: `count` new orders with
  their lineitems, and `count` orders chosen at random deleted with theirs.
  """
  @spec refresh!(SimplePG.t(), pos_integer, pos_integer) :: :ok
  def refresh!(pg, orders, count) do
    size = sizes(orders)

    SimplePG.query!(pg, """
    BEGIN;
    WITH o AS (INSERT INTO orders SELECT nextval('tpch_orderkey'), #{custkey_sql(size)}, 'O', 0,
      '1992-01-01'::date + (random() * 2405)::int, #{pick(@priorities)}, 'Clerk#1', 0, #{comment_sql()}
      FROM generate_series(1, #{count}) RETURNING o_orderkey, o_orderdate)
    INSERT INTO lineitem #{lineitems_sql("o", size)};
    CREATE TEMP TABLE gone ON COMMIT DROP AS
      SELECT o_orderkey FROM orders ORDER BY random() LIMIT #{count};
    DELETE FROM lineitem WHERE l_orderkey IN (SELECT o_orderkey FROM gone);
    DELETE FROM orders WHERE o_orderkey IN (SELECT o_orderkey FROM gone);
    COMMIT;
    """)

    :ok
  end

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
    size = sizes(@orders)
    order = :rand.uniform(size.orders + 200)
    customer = :rand.uniform(size.customers)
    part = :rand.uniform(size.parts)

    case :rand.uniform(100) do
      n when n <= 14 ->
        """
        WITH o AS (INSERT INTO orders SELECT nextval('tpch_orderkey'), #{custkey_sql(size)}, 'O', 0,
          '1992-01-01'::date + (random() * 2405)::int, #{pick(@priorities)}, 'Clerk#1', 0, #{comment_sql()}
          FROM generate_series(1, #{:rand.uniform(3)}) RETURNING o_orderkey, o_orderdate)
        INSERT INTO lineitem #{lineitems_sql("o", size)}
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
        "UPDATE lineitem SET l_partkey = #{part}, " <>
          "l_suppkey = ((#{part} + #{:rand.uniform(4) - 1} * #{stride(size)}) % #{size.suppliers}) + 1 " <>
          "WHERE l_orderkey = #{order} AND l_linenumber = 1"

      n when n <= 62 ->
        "UPDATE orders SET o_orderpriority = #{pick(@priorities)}, o_comment = #{comment_sql()}, " <>
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
        supplier = :rand.uniform(size.suppliers)

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
