#include "plan/expression_check.h"

#include <charconv>
#include <cstdint>
#include <set>

#include "pg/node_tree.h"
#include "sql/quote.h"

namespace trellis::plan {
namespace {

constexpr const char* kCheckView = "trellis_definition_check";

// The check view's stored query tree, in pieces of this many bytes: the
// tree of a long expression is many times its text (a 1 MB IN list makes
// ~37 MB), so it is read in pieces and never held whole. Bytes, not
// characters: substring of a bytea takes each piece directly, where one of a
// multibyte text would count characters from the start every time.
constexpr int kTreePieceBytes = 64 * 1024;

// Decodes bytea's escape form (encode(..., 'escape')): bytes as they are,
// except a doubled backslash for a backslash and \ooo (octal) for a zero
// byte or one with the high bit set. Nearly one byte per byte for the
// ASCII of a node tree, where hex would be two. False on anything else.
bool DecodeEscaped(std::string_view text, std::string& out) {
  out.clear();
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '\\') {
      out.push_back(text[i]);
    } else if (i + 1 < text.size() && text[i + 1] == '\\') {
      out.push_back('\\');
      i += 1;
    } else if (i + 3 < text.size()) {
      int byte = 0;
      for (std::size_t k = 1; k <= 3; ++k) {
        const char digit = text[i + k];
        if (digit < '0' || digit > '7') return false;
        byte = byte * 8 + (digit - '0');
      }
      out.push_back(static_cast<char>(byte));
      i += 3;
    } else {
      return false;
    }
  }
  return true;
}

// Reads what the check view's expressions call from its query tree
// (pg/node_tree.h). The CTE runs once; the pieces come in offset order,
// which the scan checks rather than trusts.
Result<pg::ExpressionCalls> ReadExpressionCalls(pg::Connection& conn) {
  pg::NodeTreeScanner scanner;
  int64_t next_offset = 1;
  std::string piece;
  Status read = conn.QueryEach(
      "WITH tree AS MATERIALIZED (SELECT convert_to(ev_action::text, 'UTF8') AS bytes "
      "FROM pg_rewrite WHERE ev_class = $1::regclass) "
      "SELECT piece.first, encode(substring(tree.bytes FROM piece.first FOR $2::int), 'escape') "
      "FROM tree, generate_series(1, octet_length(tree.bytes), $2::int) AS piece(first)",
      {std::string("pg_temp.") + kCheckView, std::to_string(kTreePieceBytes)},
      [&](const pg::Connection::RowView& row) -> Status {
        int64_t first = 0;
        const bool in_order =
            row[0] && row[1] &&
            std::from_chars(row[0]->data(), row[0]->data() + row[0]->size(), first).ec ==
                std::errc() &&
            first == next_offset;
        if (!in_order) {
          return Status::Internal("the query tree of a definition came back out of order");
        }
        if (!DecodeEscaped(*row[1], piece)) {
          return Status::Internal("the query tree of a definition came back in an unknown form");
        }
        next_offset += static_cast<int64_t>(piece.size());
        scanner.Feed(piece);
        return Status::OK();
      });
  if (!read.ok()) return read;
  return scanner.Finish();
}

std::string OidArray(const std::set<uint32_t>& oids) {
  std::vector<std::string> texts;
  for (uint32_t oid : oids) texts.push_back(std::to_string(oid));
  return sql::ArrayLiteral(texts);
}

}  // namespace

Result<std::string> CollateClauseOf(pg::Connection& conn, const std::string& relation,
                                    const std::string& column) {
  auto named = conn.Query(R"sql(
SELECT n.nspname, c.collname
FROM pg_catalog.pg_attribute a
JOIN pg_catalog.pg_type t ON t.oid = a.atttypid
JOIN pg_catalog.pg_collation c ON c.oid = a.attcollation
JOIN pg_catalog.pg_namespace n ON n.oid = c.collnamespace
WHERE a.attrelid = $1::regclass AND a.attname = $2::name AND NOT a.attisdropped
  AND a.attcollation <> t.typcollation)sql",
                          {relation, column});
  if (!named.ok()) return named.status();
  if (named->empty()) return std::string();
  return " COLLATE " + sql::Qualified(named->text(0, 0), named->text(0, 1));
}

Status DefinitionError(const std::string& transform_name, const Status& db_error) {
  if (db_error.code() != Code::kDatabase) return db_error;
  Status out = Status::Validation("transform " + sql::Ident(transform_name) +
                                  " is not valid: " + db_error.message());
  out.sqlstate = db_error.sqlstate;
  out.detail = db_error.detail;
  out.hint = db_error.hint;
  return out;
}

ExpressionCheck ExpressionCheckFor(pg::Connection& conn, std::string transform_name) {
  return [&conn, name = std::move(transform_name)](std::string_view from,
                                                   const std::vector<std::string_view>& exprs,
                                                   std::optional<std::string_view> where) {
    return CheckExpressions(conn, name, from, exprs, where);
  };
}

Result<std::vector<std::string>> CheckExpressions(pg::Connection& conn,
                                                  const std::string& transform_name,
                                                  std::string_view source_from,
                                                  const std::vector<std::string_view>& select_exprs,
                                                  std::optional<std::string_view> where) {
  // Built in place: the expressions may be a megabyte long, and each copy
  // of them counts in the port's peak memory.
  std::string view = "CREATE TEMPORARY VIEW " + std::string(kCheckView) + " AS SELECT ";
  std::size_t length = view.size() + source_from.size() + 64 + (where ? where->size() + 32 : 0);
  for (const auto& expr : select_exprs) length += expr.size() + 32;
  view.reserve(length);
  for (size_t i = 0; i < select_exprs.size(); ++i) {
    if (i > 0) view += ", ";
    view += "(";
    view += select_exprs[i];
    view += ") AS c" + std::to_string(i);
  }
  if (where) {
    if (!select_exprs.empty()) view += ", ";
    view += "((";
    view += *where;
    view += ")::boolean) AS w";
  }
  if (select_exprs.empty() && !where) view += "1";
  view += " FROM ";
  view += source_from;
  // Savepoint: a refused expression must not abort the caller's transaction
  // before it can report the error.
  TRELLIS_RETURN_IF_ERROR(conn.Exec("SAVEPOINT trellis_check"));
  Status created = conn.Exec(view);
  view = std::string();
  if (!created.ok()) {
    (void)conn.Exec("ROLLBACK TO SAVEPOINT trellis_check");
    return DefinitionError(transform_name, created);
  }
  auto calls = ReadExpressionCalls(conn);
  if (!calls.ok()) return calls.status();
  auto types = conn.Query(
      "SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = $1::regclass "
      "AND attnum > 0 AND attname LIKE 'c%' ORDER BY attnum",
      {std::string("pg_temp.") + kCheckView});
  if (!types.ok()) return types.status();
  std::vector<std::string> column_types;
  for (size_t r = 0; r < types->size(); ++r) column_types.push_back(types->text(r, 0));
  TRELLIS_RETURN_IF_ERROR(conn.Exec("DROP VIEW pg_temp." + std::string(kCheckView)));
  TRELLIS_RETURN_IF_ERROR(conn.Exec("RELEASE SAVEPOINT trellis_check"));

  const std::string prefix = "transform " + sql::Ident(transform_name) + " is not valid: ";
  if (calls->subquery) {
    return Status::Validation(prefix +
                              "subqueries are not allowed in a transform's expressions; "
                              "use JOIN for another table's columns");
  }
  if (calls->aggregate) {
    return Status::Validation(prefix +
                              "aggregate functions need GROUP BY; a projection computes one "
                              "target row per source row");
  }
  if (calls->window_function) {
    return Status::Validation(prefix + "window functions are not allowed in a transform");
  }
  // Operators are looked up through the function behind them (oprcode), so
  // an operator over a volatile function is refused by that function's name.
  auto volatile_names = conn.Query(
      "SELECT DISTINCT p.oid::regprocedure::text FROM pg_proc p "
      "WHERE p.provolatile = 'v' AND (p.oid = ANY($1::oid[]) OR p.oid IN "
      "(SELECT o.oprcode FROM pg_operator o WHERE o.oid = ANY($2::oid[]))) ORDER BY 1",
      {OidArray(calls->functions), OidArray(calls->operators)});
  if (!volatile_names.ok()) return volatile_names.status();
  if (!volatile_names->empty()) {
    std::vector<std::string> names;
    for (size_t r = 0; r < volatile_names->size(); ++r) names.push_back(volatile_names->text(r, 0));
    return Status::Validation(prefix + "it calls the volatile function " + sql::Join(names, ", ") +
                              ", whose result changes from one call to the next; a target must "
                              "be a function of its source rows");
  }
  return column_types;
}

}  // namespace trellis::plan
