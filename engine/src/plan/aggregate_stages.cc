#include "plan/aggregate_stages.h"

#include <algorithm>
#include <map>
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

bool IsNameToken(const Token& t) {
  return t.kind == TokenKind::kIdentifier || t.kind == TokenKind::kQuotedIdentifier;
}

bool IsMark(const Token& t, std::string_view value) {
  return t.kind == TokenKind::kPunctuation && t.value == value;
}

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
    const bool after_dot = i > 0 && IsMark(tokens[i - 1], ".");
    if (IsNameToken(t) && !after_dot) {
      const bool qualified = qualifiers.count(t.value) && IsMark(at(i + 1), ".") &&
                             IsNameToken(at(i + 2)) && !IsMark(at(i + 3), "(") &&
                             !IsMark(at(i + 3), ".");
      if (qualified) {
        out.push_back(
            ExprUnit{true, t.value, at(i + 2).value, at(i + 2).kind, t.begin, at(i + 2).end});
        i += 2;
        continue;
      }
      if (!IsMark(at(i + 1), "(") && !IsMark(at(i + 1), ".")) {
        out.push_back(ExprUnit{true, std::nullopt, t.value, t.kind, t.begin, t.end});
        continue;
      }
    }
    out.push_back(ExprUnit{false, std::nullopt, t.value, t.kind, t.begin, t.end});
  }
  return out;
}

// A GROUP BY item of the statement: its expression's units, and the hidden
// column (its own name) that holds it.
struct HiddenGroupColumn {
  std::vector<ExprUnit> units;
  std::string column;
};

class StageRewriter {
 public:
  StageRewriter(const grammar::TransformStmt& stmt,
                std::map<std::string, std::size_t>& aggregate_ids)
      : stmt_(stmt), aggregate_ids_(aggregate_ids) {
    qualifiers_.insert(stmt.source.Qualifier());
    for (const auto& join : stmt.joins) qualifiers_.insert(join.table.Qualifier());
    for (const auto& item : stmt.select) {
      if (!item.aggregate_uses.empty()) continue;
      groups_.push_back(HiddenGroupColumn{UnitsOf(item.expr, qualifiers_), item.alias});
      group_names_.insert(item.alias);
    }
    // Longest first: `a + b` is one GROUP BY item even where `a` is another.
    std::stable_sort(groups_.begin(), groups_.end(),
                     [](const auto& x, const auto& y) { return x.units.size() > y.units.size(); });
  }

  // `expr` (of `what`, for errors) over the hidden target.
  Result<std::string> Rewrite(const std::string& expr,
                              const std::vector<grammar::AggregateUse>& uses,
                              const std::string& what) {
    std::string out;
    std::size_t at = 0;
    for (const auto& use : uses) {
      auto segment = RewriteSegment(std::string_view(expr).substr(at, use.begin - at), what);
      if (!segment.ok()) return segment.status();
      out += segment.value();
      out += Hidden(AggregateColumnName(IdOf(use.call)));
      at = use.end;
    }
    auto tail = RewriteSegment(std::string_view(expr).substr(at), what);
    if (!tail.ok()) return tail.status();
    return out + tail.value();
  }

  // The number of `call`'s hidden column, numbering a new call next.
  std::size_t IdOf(const grammar::AggregateCall& call) {
    std::string key(grammar::AggregateName(call.function));
    key += call.argument ? "(" + *call.argument + ")" : "(*)";
    return aggregate_ids_.emplace(key, aggregate_ids_.size() + 1).first->second;
  }

 private:
  static std::string Hidden(const std::string& column) {
    return sql::Ident(kHiddenGroupAlias) + "." + sql::Ident(column);
  }

  Result<std::string> RewriteSegment(std::string_view text, const std::string& what) const {
    const std::vector<ExprUnit> units = UnitsOf(text, qualifiers_);
    std::string out;
    std::size_t copied = 0;
    for (std::size_t i = 0; i < units.size();) {
      const HiddenGroupColumn* match = nullptr;
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
        out += Hidden(match->column);
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

  const grammar::TransformStmt& stmt_;
  std::map<std::string, std::size_t>& aggregate_ids_;
  std::set<std::string> qualifiers_;
  std::vector<HiddenGroupColumn> groups_;
  std::set<std::string> group_names_;
};

}  // namespace

std::string AggregateColumnName(std::size_t k) { return "__trellis_a" + std::to_string(k); }

bool IsAggregateColumnName(std::string_view name) {
  constexpr std::string_view prefix = "__trellis_a";
  if (name.size() <= prefix.size() || name.substr(0, prefix.size()) != prefix) return false;
  return std::all_of(name.begin() + prefix.size(), name.end(),
                     [](char c) { return c >= '0' && c <= '9'; });
}

Result<AggregateStages> CompileAggregateStages(const grammar::TransformStmt& stmt,
                                               const grammar::QualifiedName& hidden) {
  AggregateStages out;
  std::map<std::string, std::size_t> ids;  // a call's text -> its column number
  StageRewriter rewriter(stmt, ids);

  grammar::TransformStmt& owner = out.owner;
  owner.target = stmt.target;
  owner.source = grammar::TableRef{hidden, std::string(kHiddenGroupAlias)};
  owner.readers = stmt.readers;
  for (const auto& item : stmt.select) {
    grammar::SelectItem column{"", item.alias, item.position, {}, {}};
    if (item.aggregate_uses.empty()) {
      // A GROUP BY item: the hidden column of its own name, which the
      // projection takes as its key.
      column.expr = sql::Ident(kHiddenGroupAlias) + "." + sql::Ident(item.alias);
    } else {
      auto expr =
          rewriter.Rewrite(item.expr, item.aggregate_uses, "the column " + sql::Ident(item.alias));
      if (!expr.ok()) return expr.status();
      column.expr = std::move(expr.value());
    }
    owner.select.push_back(std::move(column));
  }
  if (stmt.having) {
    auto where = rewriter.Rewrite(*stmt.having, stmt.having_uses, "HAVING");
    if (!where.ok()) return where.status();
    owner.where = std::move(where.value());
  }

  grammar::TransformStmt& group = out.group;
  group.target = hidden;
  group.source = stmt.source;
  group.joins = stmt.joins;
  group.where = stmt.where;
  group.group_by = stmt.group_by;
  group.without_source_index = stmt.without_source_index;
  group.without_row_security = stmt.without_row_security;
  for (const auto& item : stmt.select) {
    if (item.aggregate_uses.empty()) group.select.push_back(item);
  }
  // Each distinct call once, in the order first written.
  std::vector<std::pair<std::size_t, const grammar::AggregateUse*>> calls;
  auto add = [&](const std::vector<grammar::AggregateUse>& uses, std::size_t position) {
    for (const auto& use : uses) {
      const std::size_t k = rewriter.IdOf(use.call);
      if (k > calls.size()) calls.emplace_back(position, &use);
    }
  };
  for (const auto& item : stmt.select) add(item.aggregate_uses, item.position);
  add(stmt.having_uses, 0);
  for (std::size_t k = 1; k <= calls.size(); ++k) {
    const grammar::AggregateCall& call = calls[k - 1].second->call;
    const std::string expr = std::string(grammar::AggregateName(call.function)) + "(" +
                             call.argument.value_or("*") + ")";
    group.select.push_back(grammar::SelectItem{expr,
                                               AggregateColumnName(k),
                                               calls[k - 1].first,
                                               call,
                                               {grammar::AggregateUse{call, 0, expr.size()}}});
  }
  return out;
}

}  // namespace trellis::plan
