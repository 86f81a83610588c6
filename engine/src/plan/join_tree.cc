#include "plan/join_tree.h"

#include <algorithm>
#include <map>
#include <set>

#include "grammar/render.h"
#include "sql/quote.h"

namespace trellis::plan {
namespace {

// A unique key of a table among `columns`: a unique, valid, non-partial
// index on plain columns whose key columns (INCLUDE columns aside) are all
// among them. Equality on a unique key already picks at most one row, so
// any further equality only narrows it: a superset of a unique key is
// unique.
constexpr std::string_view kUniqueOn = R"sql(SELECT EXISTS (
  SELECT 1 FROM pg_catalog.pg_index i
  WHERE i.indrelid = $1::regclass AND i.indisunique AND i.indisvalid
    AND i.indpred IS NULL AND i.indexprs IS NULL
    AND ARRAY(SELECT a.attname::text
              FROM unnest(i.indkey::int2[]) WITH ORDINALITY AS k(attnum, n)
              JOIN pg_catalog.pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
              WHERE k.n <= i.indnkeyatts)
        <@ $2::text[]))sql";

// The input `i` joins (its parent in the tree); `i` is not the FROM table.
size_t Parent(const std::vector<catalog::Input>& inputs, size_t i) {
  return IndexOfOrdinal(inputs, *inputs[i].joined_to);
}

std::vector<size_t> Neighbours(const std::vector<catalog::Input>& inputs, size_t u) {
  std::vector<size_t> out;
  if (u != 0) out.push_back(Parent(inputs, u));
  for (size_t v = 1; v < inputs.size(); ++v) {
    if (Parent(inputs, v) == u) out.push_back(v);
  }
  return out;
}

// From `i` up to the FROM table, `i` first.
std::vector<size_t> Ancestry(const std::vector<catalog::Input>& inputs, size_t i) {
  std::vector<size_t> out{i};
  while (i != 0) {
    i = Parent(inputs, i);
    out.push_back(i);
  }
  return out;
}

}  // namespace

Result<bool> UniqueOn(pg::Connection& conn, const catalog::Input& input,
                      const std::vector<std::string>& columns) {
  const std::set<std::string> on(columns.begin(), columns.end());
  const auto& key = input.source.key_columns;
  if (!key.empty() &&
      std::all_of(key.begin(), key.end(), [&](const auto& c) { return on.count(c) > 0; })) {
    return true;
  }
  auto unique = conn.Query(std::string(kUniqueOn), {InputTable(input), sql::ArrayLiteral(columns)});
  if (!unique.ok()) return unique.status();
  return unique->text(0, 0) == "t";
}

std::string InputTable(const catalog::Input& input) {
  return sql::Qualified(input.source.schema_name, input.source.table_name);
}

std::string InputShown(const catalog::Input& input) {
  return grammar::RenderQualified(
      grammar::QualifiedName{input.source.schema_name, input.source.table_name});
}

size_t IndexOfOrdinal(const std::vector<catalog::Input>& inputs, int ordinal) {
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].ordinal == ordinal) return i;
  }
  return 0;
}

std::vector<size_t> PreservedInputs(const std::vector<catalog::Input>& inputs) {
  std::vector<size_t> preserved{0};
  for (size_t i = 1; i < inputs.size(); ++i) {
    switch (inputs[i].role) {
      case catalog::InputRole::kFrom:
      case catalog::InputRole::kInnerJoin:
        preserved.push_back(i);
        break;
      case catalog::InputRole::kLeftJoin:
        break;
      case catalog::InputRole::kRightJoin:
        preserved = {i};
        break;
      case catalog::InputRole::kFullJoin:
        preserved.clear();
        break;
    }
  }
  return preserved;
}

std::vector<size_t> PathBetween(const std::vector<catalog::Input>& inputs, size_t root, size_t to) {
  const std::vector<size_t> up = Ancestry(inputs, root);
  std::vector<size_t> down = Ancestry(inputs, to);
  // The lowest common ancestor: the first of `down` that `up` holds.
  size_t meet = 0;
  for (size_t d = 0; d < down.size(); ++d) {
    if (std::find(up.begin(), up.end(), down[d]) != up.end()) {
      meet = d;
      break;
    }
  }
  std::vector<size_t> path;
  for (size_t u : up) {
    path.push_back(u);
    if (u == down[meet]) break;
  }
  for (size_t d = meet; d-- > 0;) path.push_back(down[d]);
  return path;
}

JoinEdge EdgeBetween(const std::vector<catalog::Input>& inputs, size_t near, size_t far) {
  if (far != 0 && Parent(inputs, far) == near) {
    return JoinEdge{inputs[far].joined_columns, inputs[far].join_columns};
  }
  return JoinEdge{inputs[near].join_columns, inputs[near].joined_columns};
}

std::string JoinCondition(const std::vector<catalog::Input>& inputs, size_t joined) {
  const catalog::Input& me = inputs[joined];
  const std::string to = sql::Ident(inputs[Parent(inputs, joined)].alias);
  std::vector<std::string> parts;
  for (size_t i = 0; i < me.join_columns.size(); ++i) {
    parts.push_back(to + "." + sql::Ident(me.joined_columns[i]) + " = " + sql::Ident(me.alias) +
                    "." + sql::Ident(me.join_columns[i]));
  }
  return sql::Join(parts, " AND ");
}

std::string InnerPathFrom(const std::vector<catalog::Input>& inputs,
                          const std::vector<size_t>& path) {
  std::string text =
      InputTable(inputs[path.front()]) + " AS " + sql::Ident(inputs[path.front()].alias);
  for (size_t k = 1; k < path.size(); ++k) {
    const size_t here = path[k];
    const size_t joined = here != 0 && Parent(inputs, here) == path[k - 1] ? here : path[k - 1];
    text += " JOIN " + InputTable(inputs[here]) + " AS " + sql::Ident(inputs[here].alias) + " ON " +
            JoinCondition(inputs, joined);
  }
  return text;
}

size_t JoinShape::KeyedCount() const { return std::count(keyed.begin(), keyed.end(), true); }

Result<JoinShape> ChooseJoinShape(pg::Connection& conn, const std::string& name,
                                  const std::vector<catalog::Input>& inputs) {
  const std::vector<size_t> preserved = PreservedInputs(inputs);
  if (preserved.empty()) {
    return Status::Internal("transform " + sql::Ident(name) +
                            ": no input is in every row, so the join has no root (a FULL JOIN's "
                            "plan keys it by its join value instead)");
  }
  // Whether input `far` repeats under one row of its neighbour `near`,
  // asked of the server once per direction.
  std::map<std::pair<size_t, size_t>, bool> repeats;
  auto repeats_under = [&](size_t near, size_t far) -> Result<bool> {
    auto found = repeats.find({near, far});
    if (found != repeats.end()) return found->second;
    auto unique = UniqueOn(conn, inputs[far], EdgeBetween(inputs, near, far).far_columns);
    if (!unique.ok()) return unique.status();
    return repeats[{near, far}] = !unique.value();
  };
  std::optional<JoinShape> best;
  for (size_t root : preserved) {
    if (inputs[root].source.key_columns.empty()) continue;
    JoinShape shape{root, std::vector<bool>(inputs.size(), false)};
    std::vector<size_t> frontier{root};
    std::set<size_t> seen{root};
    while (!frontier.empty()) {
      const size_t near = frontier.back();
      frontier.pop_back();
      for (size_t far : Neighbours(inputs, near)) {
        if (!seen.insert(far).second) continue;
        auto repeat = repeats_under(near, far);
        if (!repeat.ok()) return repeat.status();
        shape.keyed[far] = repeat.value();
        frontier.push_back(far);
      }
    }
    if (!best || shape.KeyedCount() < best->KeyedCount()) best = std::move(shape);
  }
  if (!best) {
    return Status::Validation("transform " + sql::Ident(name) + " needs a primary key on " +
                              InputShown(inputs[preserved.front()]) +
                              ", whose rows are in every target row: add one (ALTER TABLE ... "
                              "ADD PRIMARY KEY)");
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!best->keyed[i] || !inputs[i].source.key_columns.empty()) continue;
    return Status::Validation(
        "transform " + sql::Ident(name) + " joins " + InputShown(inputs[i]) +
        ", whose rows may repeat in the target (the columns it is joined on are not unique), so "
        "its key is part of the target's; it has none: add a primary key to " +
        InputShown(inputs[i]) + ", or join it on columns that are unique");
  }
  return *best;
}

size_t StoredRoot(const std::vector<catalog::Input>& inputs,
                  const std::vector<catalog::KeyColumn>& key) {
  for (size_t i = 0; i < inputs.size(); ++i) {
    const auto& columns = inputs[i].source.key_columns;
    if (columns.empty() || columns.size() > key.size()) continue;
    bool leads = true;
    for (size_t c = 0; c < columns.size() && leads; ++c) {
      leads = key[c].expr == sql::Ident(inputs[i].alias) + "." + sql::Ident(columns[c]);
    }
    if (leads) return i;
  }
  return 0;
}

}  // namespace trellis::plan
