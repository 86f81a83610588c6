// pg::NodeTreeScanner over node-tree text written the way PostgreSQL 15
// writes a view's query (outfuncs.c), fed whole and in pieces of every size.
#include <catch2/catch.hpp>

#include <string>
#include <string_view>

#include "pg/node_tree.h"

using trellis::Code;
using trellis::pg::ExpressionCalls;
using trellis::pg::NodeTreeScanner;

namespace {

ExpressionCalls Scan(std::string_view text, std::size_t piece = 0) {
  NodeTreeScanner scanner;
  if (piece == 0) {
    scanner.Feed(text);
  } else {
    for (std::size_t at = 0; at < text.size(); at += piece) scanner.Feed(text.substr(at, piece));
  }
  auto calls = scanner.Finish();
  INFO((calls.ok() ? "" : calls.status().ToString()));
  REQUIRE(calls.ok());
  return calls.value();
}

trellis::Status ScanError(std::string_view text) {
  NodeTreeScanner scanner;
  scanner.Feed(text);
  auto calls = scanner.Finish();
  REQUIRE_FALSE(calls.ok());
  return calls.status();
}

// `price + random()` and `id = ANY ('{1,2}')` and `(a, b) < (1, 2)` in the
// target list of a view over widgets, shortened but with every field the
// scanner passes over written as PostgreSQL writes it: names with escaped
// spaces and brackets, a constant's bytes, empty tokens, OID lists.
constexpr std::string_view kTree =
    R"(({QUERY :commandType 1 :querySource 0 :canSetTag true :utilityStmt <> )"
    R"(:rtable ({RANGETBLENTRY :alias {ALIAS :aliasname w :colnames <>} )"
    R"(:eref {ALIAS :aliasname w :colnames ("id" "odd\ \(name\)\}" "price")} :rtekind 0 )"
    R"(:relid 16384 :relkind r :selectedCols (b 9 10)}) )"
    R"(:targetList ({TARGETENTRY :expr {OPEXPR :opno 1758 :opfuncid 1724 :opresulttype 1700 )"
    R"(:opretset false :opcollid 0 :inputcollid 0 :args ({VAR :varno 1 :varattno 3 )"
    R"(:vartype 1700 :location 7} {FUNCEXPR :funcid 1598 :funcresulttype 701 )"
    R"(:funcretset false :funcvariadic false :funcformat 0 :funccollid 0 :inputcollid 0 )"
    R"(:args <> :location 15}) :location 13} :resno 1 :resname c0 :ressortgroupref 0 )"
    R"(:resorigtbl 0 :resorigcol 0 :resjunk false} )"
    R"({TARGETENTRY :expr {SCALARARRAYOPEXPR :opno 96 :opfuncid 65 :hashfuncid 0 )"
    R"(:negfuncid 0 :useOr true :inputcollid 0 :args ({VAR :varno 1 :varattno 1 )"
    R"(:location 40} {CONST :consttype 1007 :consttypmod -1 :constcollid 0 :constlen -1 )"
    R"(:constbyval false :constisnull false :location 49 :constvalue 32 [ -128 0 0 0 1 0 )"
    R"(0 0 0 0 0 0 23 0 0 0 2 0 0 0 1 0 0 0 1 0 0 0 2 0 0 0 ]}) :location 46} :resno 2 )"
    R"(:resname c1} {TARGETENTRY :expr {ROWCOMPAREEXPR :rctype 1 :opnos (o 97 2990) )"
    R"(:opfamilies (o 1976 1994) :inputcollids (o 0 100) :largs <> :rargs <>} :resno 3 )"
    R"(:resname c2}) :jointree {FROMEXPR :fromlist ({RANGETBLREF :rtindex 1}) :quals <>} )"
    R"(:stmt_location 0 :stmt_len 0}))";

}  // namespace

TEST_CASE("the scanner collects the functions and operators a query tree calls", "[node_tree]") {
  const ExpressionCalls calls = Scan(kTree);
  CHECK(calls.functions == std::set<uint32_t>{1724, 1598, 65});
  CHECK(calls.operators == std::set<uint32_t>{1758, 96, 97, 2990});
  CHECK_FALSE(calls.subquery);
  CHECK_FALSE(calls.aggregate);
  CHECK_FALSE(calls.window_function);
}

TEST_CASE("the scanner reads the same tree in pieces of any size", "[node_tree]") {
  const ExpressionCalls whole = Scan(kTree);
  for (std::size_t piece = 1; piece <= 97; ++piece) {
    INFO("pieces of " << piece << " bytes");
    const ExpressionCalls pieces = Scan(kTree, piece);
    CHECK(pieces.functions == whole.functions);
    CHECK(pieces.operators == whole.operators);
  }
}

TEST_CASE("the scanner finds subqueries, aggregates and window functions", "[node_tree]") {
  CHECK(Scan("({QUERY :targetList ({SUBLINK :subLinkType 4 :subselect {QUERY}})})").subquery);
  CHECK(Scan("({QUERY :targetList ({AGGREF :aggfnoid 2147 :args <>})})").aggregate);
  CHECK(Scan("({QUERY :targetList ({WINDOWFUNC :winfnoid 3100})})").window_function);
}

TEST_CASE("fields count only in the node they belong to", "[node_tree]") {
  // A name that reads like a field, and funcid/opno of nodes that do not
  // call them, are not calls.
  const ExpressionCalls calls =
      Scan(R"(({QUERY :rtable ({RANGETBLENTRY :eref {ALIAS :aliasname \:funcid :colnames )"
           R"(("\:opno" "1")}}) :targetList ({SORTGROUPCLAUSE :eqop 96 :sortop 97} )"
           R"({FUNCEXPR :funcid 0 :args ({OPEXPR :opno 551 :opfuncid 0})})}))");
  CHECK(calls.functions.empty());
  CHECK(calls.operators == std::set<uint32_t>{551});
}

TEST_CASE("a tree the scanner cannot read is an error, never an empty answer", "[node_tree]") {
  CHECK(ScanError("({QUERY :targetList ({FUNCEXPR :funcid 12").code() == Code::kInternal);
  CHECK_THAT(ScanError("({FUNCEXPR :funcid random})").message(),
             Catch::Contains("where an OID belongs"));
  CHECK_THAT(ScanError("({FUNCEXPR :funcid -1})").message(),
             Catch::Contains("where an OID belongs"));
  CHECK_THAT(ScanError("({FUNCEXPR :funcid 99999999999})").message(),
             Catch::Contains("where an OID belongs"));
  CHECK_THAT(ScanError("({FUNCEXPR})})").message(), Catch::Contains("closes no"));
  CHECK_THAT(ScanError("({ :funcid 1})").message(), Catch::Contains("node name"));
  CHECK_THAT(ScanError("({ROWCOMPAREEXPR :opnos (o 1 x)})").message(),
             Catch::Contains("where an OID belongs"));
}
