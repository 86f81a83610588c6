#include "capture/decoded_changes.h"

#include <algorithm>
#include <variant>

namespace trellis::capture {
namespace {

using pgoutput::Lsn;
using Version = std::vector<std::optional<std::string>>;

// The value of column `at` of `tuple`, with an unchanged out-of-line value
// taken from `fallback` (the old row of the same UPDATE) when it has one.
// nullopt when the value was not sent at all.
std::optional<std::optional<std::string>> ValueAt(const pgoutput::Tuple& tuple, size_t at,
                                                  const pgoutput::Tuple* fallback) {
  if (at >= tuple.size()) return std::nullopt;
  const pgoutput::Value& v = tuple[at];
  switch (v.kind) {
    case pgoutput::ValueKind::kNull:
      return std::optional<std::string>();
    case pgoutput::ValueKind::kText:
      return std::optional<std::string>(v.text);
    case pgoutput::ValueKind::kUnchangedToast:
      if (fallback && at < fallback->size() &&
          (*fallback)[at].kind != pgoutput::ValueKind::kUnchangedToast) {
        return ValueAt(*fallback, at, nullptr);
      }
      return std::nullopt;
  }
  return std::nullopt;
}

// The routing values of one row version, or nullopt when a routing column
// is missing from the relation or from what the server sent. `key_only`:
// `tuple` holds the replica identity's columns only (the others arrive as
// NULL and mean nothing).
std::optional<Version> RoutingVersion(const pgoutput::Relation& relation,
                                      const std::vector<std::string>& routing,
                                      const pgoutput::Tuple& tuple, bool key_only,
                                      const pgoutput::Tuple* fallback) {
  Version out;
  for (const auto& name : routing) {
    auto column = std::find_if(relation.columns.begin(), relation.columns.end(),
                               [&](const auto& c) { return c.name == name; });
    if (column == relation.columns.end()) return std::nullopt;
    if (key_only && !column->key) return std::nullopt;
    auto value = ValueAt(tuple, static_cast<size_t>(column - relation.columns.begin()), fallback);
    if (!value) return std::nullopt;
    out.push_back(std::move(*value));
  }
  return out;
}

// True when every routing column is a replica identity column: then a row's
// old routing values equal its new ones unless the server sent the old key.
bool RoutedByIdentity(const pgoutput::Relation& relation, const std::vector<std::string>& routing) {
  for (const auto& name : routing) {
    auto column = std::find_if(relation.columns.begin(), relation.columns.end(),
                               [&](const auto& c) { return c.name == name; });
    if (column == relation.columns.end() || !column->key) return false;
  }
  return true;
}

// The old and new versions of one change, for one source: nullopt when the
// old values cannot be known.
struct Versions {
  std::vector<Version> old_versions;
  std::vector<Version> new_versions;
};

std::optional<Versions> VersionsOf(const pgoutput::Message& change,
                                   const pgoutput::Relation& relation,
                                   const std::vector<std::string>& routing) {
  Versions out;
  if (const auto* ins = std::get_if<pgoutput::Insert>(&change)) {
    auto v = RoutingVersion(relation, routing, ins->new_tuple, false, nullptr);
    if (!v) return std::nullopt;
    out.new_versions.push_back(std::move(*v));
  } else if (const auto* upd = std::get_if<pgoutput::Update>(&change)) {
    const pgoutput::Tuple* old = upd->old_tuple ? &*upd->old_tuple : nullptr;
    const bool full_old = old && !upd->old_is_key_only;
    auto v = RoutingVersion(relation, routing, upd->new_tuple, false, full_old ? old : nullptr);
    if (!v) return std::nullopt;
    std::optional<Version> before;
    if (old) {
      before = RoutingVersion(relation, routing, *old, upd->old_is_key_only, nullptr);
    } else if (RoutedByIdentity(relation, routing)) {
      before = *v;  // the key did not change, so neither did any routing value
    }
    if (!before) return std::nullopt;
    out.old_versions.push_back(std::move(*before));
    out.new_versions.push_back(std::move(*v));
  } else if (const auto* del = std::get_if<pgoutput::Delete>(&change)) {
    auto v = RoutingVersion(relation, routing, del->old_tuple, del->old_is_key_only, nullptr);
    if (!v) return std::nullopt;
    out.old_versions.push_back(std::move(*v));
  }
  return out;
}

uint32_t RelationOf(const pgoutput::Message& change) {
  if (const auto* m = std::get_if<pgoutput::Insert>(&change)) return m->relation_oid;
  if (const auto* m = std::get_if<pgoutput::Update>(&change)) return m->relation_oid;
  if (const auto* m = std::get_if<pgoutput::Delete>(&change)) return m->relation_oid;
  return 0;
}

char OpOf(const pgoutput::Message& change) {
  if (std::holds_alternative<pgoutput::Insert>(change)) return 'I';
  if (std::holds_alternative<pgoutput::Update>(change)) return 'U';
  return 'D';
}

// One transaction's rows, built as its changes arrive.
class TransactionRows {
 public:
  explicit TransactionRows(uint32_t xid) : xid_(xid) {}

  void Add(int source_id, char op, uint32_t relid, Versions versions) {
    DecodedRow* row = rows_.empty() ? nullptr : &rows_.back();
    // Consecutive changes of one relation and operation form one row, as
    // one statement's did under triggers. The old versions of a run of
    // UPDATEs stay ahead of its new ones.
    if (!row || row->source_id != source_id || row->op != op || row->relid != relid) {
      rows_.push_back(DecodedRow{source_id, op, xid_, relid, {}});
      olds_.emplace_back();
      row = &rows_.back();
    }
    for (auto& v : versions.old_versions) olds_.back().push_back(std::move(v));
    for (auto& v : versions.new_versions) row->versions.push_back(std::move(v));
  }

  void AddTruncate(int source_id, uint32_t relid) {
    rows_.push_back(DecodedRow{source_id, 'T', xid_, relid, {}});
    olds_.emplace_back();
  }

  std::vector<DecodedRow> Finish() {
    for (size_t i = 0; i < rows_.size(); ++i) {
      auto& versions = rows_[i].versions;
      versions.insert(versions.begin(), std::make_move_iterator(olds_[i].begin()),
                      std::make_move_iterator(olds_[i].end()));
    }
    return std::move(rows_);
  }

 private:
  uint32_t xid_;
  std::vector<DecodedRow> rows_;
  std::vector<std::vector<Version>> olds_;
};

std::string Quoted(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

}  // namespace

Result<std::vector<uint32_t>> DescribedRelations(const std::vector<std::string>& messages) {
  std::vector<uint32_t> out;
  for (const auto& bytes : messages) {
    // Only a Relation ('R') message is decoded here; the rest wait.
    if (bytes.empty() || bytes[0] != 'R') continue;
    auto decoded = pgoutput::Decode(bytes);
    if (!decoded.ok()) return decoded.status();
    const uint32_t oid = std::get<pgoutput::Relation>(decoded.value()).oid;
    if (std::find(out.begin(), out.end(), oid) == out.end()) out.push_back(oid);
  }
  return out;
}

Result<DecodedStream> DecodeChanges(const std::vector<std::string>& messages,
                                    const std::map<uint32_t, std::vector<RelationSource>>& sources,
                                    const DecodeRules& rules) {
  DecodedStream out;
  std::map<uint32_t, pgoutput::Relation> relations;
  std::optional<TransactionRows> open;
  std::optional<pgoutput::Begin> begin;
  bool mark_here = false;
  bool awaiting = rules.awaiting_mark.has_value();
  for (const auto& bytes : messages) {
    auto decoded = pgoutput::Decode(bytes);
    if (!decoded.ok()) return decoded.status();
    pgoutput::Message& message = decoded.value();
    if (auto* b = std::get_if<pgoutput::Begin>(&message)) {
      begin = *b;
      open.emplace(b->xid);
      mark_here = false;
      continue;
    }
    if (auto* r = std::get_if<pgoutput::Relation>(&message)) {
      relations[r->oid] = std::move(*r);
      continue;
    }
    if (std::holds_alternative<pgoutput::Origin>(message) ||
        std::holds_alternative<pgoutput::Type>(message)) {
      continue;
    }
    if (!open) return Status::Internal("pgoutput stream: a change outside a transaction");
    if (auto* c = std::get_if<pgoutput::Commit>(&message)) {
      std::vector<DecodedRow> rows = open->Finish();
      open.reset();
      const bool staged = c->end_lsn <= rules.staged_through;
      // Which side of the mark this transaction is on.
      bool take = !staged;
      if (awaiting) {
        if (rules.take_before_mark) {
          if (mark_here) {
            // Triggers capture from this transaction on: the stream ends
            // here for this feed, with this transaction dropped.
            out.mark_seen = true;
            out.last_end = c->end_lsn;
            ++out.transactions;
            return out;
          }
        } else {
          take = false;  // captured by triggers, up to and with the mark
          if (mark_here) {
            out.mark_seen = true;
            awaiting = false;
          }
        }
      }
      if (take) {
        for (auto& row : rows) out.rows.push_back(std::move(row));
      }
      out.last_end = c->end_lsn;
      ++out.transactions;
      continue;
    }
    if (auto* t = std::get_if<pgoutput::Truncate>(&message)) {
      for (uint32_t oid : t->relation_oids) {
        auto found = sources.find(oid);
        if (found == sources.end()) continue;
        for (const auto& source : found->second) open->AddTruncate(source.source_id, oid);
      }
      continue;
    }
    const uint32_t relid = RelationOf(message);
    if (rules.marks_relid != 0 && relid == rules.marks_relid) {
      const auto* ins = std::get_if<pgoutput::Insert>(&message);
      const auto rel = relations.find(relid);
      if (ins && rel != relations.end() && rules.awaiting_mark) {
        const auto& columns = rel->second.columns;
        for (size_t i = 0; i < columns.size() && i < ins->new_tuple.size(); ++i) {
          if (columns[i].name == "id" &&
              ins->new_tuple[i].text == std::to_string(*rules.awaiting_mark)) {
            mark_here = true;
          }
        }
      }
      continue;
    }
    auto found = sources.find(relid);
    if (found == sources.end()) continue;
    const auto rel = relations.find(relid);
    if (rel == relations.end()) {
      return Status::Internal("pgoutput stream: a change of relation " + std::to_string(relid) +
                              " before its description");
    }
    for (const auto& source : found->second) {
      auto versions = VersionsOf(message, rel->second, source.routing_columns);
      if (!versions) {
        // The server did not send what the source routes by: its readers
        // rebuild, as after a TRUNCATE.
        out.unroutable.push_back(rel->second.schema + "." + rel->second.name);
        open->AddTruncate(source.source_id, relid);
        continue;
      }
      open->Add(source.source_id, OpOf(message), relid, std::move(*versions));
    }
  }
  // Peeking ends at a transaction's commit: anything open here is cut off
  // and will be read whole by the next peek.
  return out;
}

std::string RoutingLiteral(const std::vector<std::vector<std::optional<std::string>>>& versions) {
  if (versions.empty() || versions.front().empty()) return "{}";
  std::string out = "{";
  for (size_t r = 0; r < versions.size(); ++r) {
    if (r) out += ',';
    out += '{';
    for (size_t c = 0; c < versions[r].size(); ++c) {
      if (c) out += ',';
      out += versions[r][c] ? Quoted(*versions[r][c]) : std::string("NULL");
    }
    out += '}';
  }
  return out + "}";
}

uint64_t WidenXid(uint32_t xid, uint64_t xmax) {
  const uint32_t low = static_cast<uint32_t>(xmax);
  return xmax - static_cast<uint32_t>(low - xid);
}

}  // namespace trellis::capture
