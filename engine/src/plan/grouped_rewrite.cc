#include "plan/grouped_rewrite.h"

#include <algorithm>
#include <optional>
#include <set>

#include "grammar/aggregate.h"
#include "grammar/lexer.h"
#include "plan/aggregates/group_check.h"
#include "sql/quote.h"

namespace trellis::plan {
namespace {

using grammar::Token;
using grammar::TokenKind;

// One piece of an expression as the rewrite compares it: a column reference
// (`q.c` with q a table of the statement, or a bare name that is neither
// called nor qualified further), or any other single token. PostgreSQL reads
// `c` and `q.c` as the same column when it accepts both in one grouped query
// (a bare name it resolves unambiguously is that table's column), so the two
// match; two different qualifiers do not.
struct ExprUnit {
  bool column = false;
  std::optional<std::string> qualifier;
  std::string value;  // the column's name, or the token's value
  TokenKind kind = TokenKind::kOther;
  std::size_t begin = 0;
  std::size_t end = 0;
};

bool IsNameTokenKind(TokenKind kind) {
  return kind == TokenKind::kIdentifier || kind == TokenKind::kQuotedIdentifier;
}

bool SameUnit(const ExprUnit& a, const ExprUnit& b) {
  if (a.column != b.column || a.value != b.value) return false;
  if (a.column) return !a.qualifier || !b.qualifier || *a.qualifier == *b.qualifier;
  return a.kind == b.kind || (IsNameTokenKind(a.kind) && IsNameTokenKind(b.kind));
}

std::vector<ExprUnit> UnitsOf(std::string_view text, const std::set<std::string>& qualifiers) {
  const std::vector<Token> tokens = grammar::Tokenize(text);
  std::vector<ExprUnit> out;
  auto at = [&](std::size_t i) -> const Token& {
    return i < tokens.size() ? tokens[i] : tokens.back();
  };
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    const Token& t = tokens[i];
    if (t.kind == TokenKind::kEnd || t.kind == TokenKind::kError) break;
    const bool after_dot = i > 0 && grammar::IsMark(tokens[i - 1], ".");
    if (grammar::IsName(t) && !after_dot) {
      const bool qualified = qualifiers.count(t.value) && grammar::IsMark(at(i + 1), ".") &&
                             grammar::IsName(at(i + 2)) && !grammar::IsMark(at(i + 3), "(") &&
                             !grammar::IsMark(at(i + 3), ".");
      if (qualified) {
        out.push_back(
            ExprUnit{true, t.value, at(i + 2).value, at(i + 2).kind, t.begin, at(i + 2).end});
        i += 2;
        continue;
      }
      if (!grammar::IsMark(at(i + 1), "(") && !grammar::IsMark(at(i + 1), ".")) {
        out.push_back(ExprUnit{true, std::nullopt, t.value, t.kind, t.begin, t.end});
        continue;
      }
    }
    out.push_back(ExprUnit{false, std::nullopt, t.value, t.kind, t.begin, t.end});
  }
  return out;
}

// A GROUP BY item of the statement: its expression's units, and the target
// column (its own name) that holds it.
struct GroupColumn {
  std::vector<ExprUnit> units;
  std::string column;
};

class GroupMatcher {
 public:
  GroupMatcher(const grammar::TransformStmt& stmt, std::string_view alias)
      : stmt_(stmt), alias_(alias) {
    qualifiers_.insert(stmt.source.Qualifier());
    for (const auto& join : stmt.joins) qualifiers_.insert(join.table.Qualifier());
    for (const auto& item : stmt.select) {
      if (!item.aggregate_uses.empty()) continue;
      groups_.push_back(GroupColumn{UnitsOf(item.expr, qualifiers_), item.alias});
      group_names_.insert(item.alias);
    }
    // Longest first: `a + b` is one GROUP BY item even where `a` is another.
    std::stable_sort(groups_.begin(), groups_.end(),
                     [](const auto& x, const auto& y) { return x.units.size() > y.units.size(); });
  }

  // `text`, a part of an expression outside its aggregate calls, over the
  // target.
  Result<std::string> Rewrite(std::string_view text, const std::string& what) const {
    const std::vector<ExprUnit> units = UnitsOf(text, qualifiers_);
    std::string out;
    std::size_t copied = 0;
    for (std::size_t i = 0; i < units.size();) {
      const GroupColumn* match = nullptr;
      for (const auto& g : groups_) {
        if (g.units.empty() || i + g.units.size() > units.size()) continue;
        bool same = true;
        for (std::size_t j = 0; same && j < g.units.size(); ++j)
          same = SameUnit(units[i + j], g.units[j]);
        if (same) {
          match = &g;
          break;
        }
      }
      if (match) {
        out.append(text.substr(copied, units[i].begin - copied));
        out += sql::Ident(alias_) + "." + sql::Ident(match->column);
        copied = units[i + match->units.size() - 1].end;
        i += match->units.size();
        continue;
      }
      const ExprUnit& u = units[i];
      if (u.column && (u.qualifier || group_names_.count(u.value))) {
        const std::string written(text.substr(u.begin, u.end - u.begin));
        return aggregates::Refusal(
            stmt_.target.name,
            what + " uses " + written +
                " outside an aggregate, and it is not one of the GROUP BY expressions as "
                "written in the SELECT list; outside aggregate calls, write each GROUP BY "
                "expression exactly as its SELECT item does, or use the column inside an "
                "aggregate");
      }
      ++i;
    }
    out.append(text.substr(copied));
    return out;
  }

 private:
  const grammar::TransformStmt& stmt_;
  std::string alias_;
  std::set<std::string> qualifiers_;
  std::vector<GroupColumn> groups_;
  std::set<std::string> group_names_;
};

}  // namespace

Result<std::string> RewriteOverGroups(const grammar::TransformStmt& stmt, std::string_view alias,
                                      const std::string& expr,
                                      const std::vector<grammar::AggregateUse>& uses,
                                      const std::string& what, const CallSql& call_sql) {
  const GroupMatcher groups(stmt, alias);
  std::string out;
  std::size_t at = 0;
  for (const auto& use : uses) {
    auto segment = groups.Rewrite(std::string_view(expr).substr(at, use.begin - at), what);
    if (!segment.ok()) return segment.status();
    out += segment.value();
    out += call_sql(use.call);
    at = use.end;
  }
  auto tail = groups.Rewrite(std::string_view(expr).substr(at), what);
  if (!tail.ok()) return tail.status();
  return out + tail.value();
}

std::string CallText(const grammar::AggregateCall& call) {
  std::string out = grammar::CallName(call);
  if (!call.argument) return out + "(*)";
  return out + (call.distinct ? "(DISTINCT " : "(") + *call.argument + ")";
}

}  // namespace trellis::plan
