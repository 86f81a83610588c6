#include "statements/alter.h"

#include "catalog/migrations.h"
#include "catalog/model.h"
#include "catalog/parts.h"
#include "grammar/address.h"
#include "grammar/render.h"
#include "plan/bind.h"
#include "statements/alter_lock.h"

namespace trellis::statements {
namespace {

// The transform an ALTER names, locked, inside a fresh transaction, and its
// plan, which makes the change.
struct Altering {
  std::unique_ptr<pg::Transaction> tx;
  catalog::Transform transform;
  std::unique_ptr<plan::TransformPlan> plan;
};

// The locks the transform's plan takes before any catalog lock (tables
// before the catalog, spec/engine.md "Define", step 3), from its rows read
// without a lock; `adds`: the ALTER may add or change a column. Nothing for
// a name that is no transform: the locked load that follows reports it.
Status LockBeforeCatalog(pg::Connection& conn, const std::string& schema, const std::string& name,
                         bool adds) {
  auto t = catalog::LoadTransform(conn, schema, name, /*lock=*/false);
  if (!t.ok()) return Status::OK();
  auto plan = plan::Bind(t.value(), schema);
  if (!plan.ok()) return Status::OK();
  const plan::AlterPlan& alter = *plan.value();
  return alter.LockForAlter(conn, schema, t.value(), adds);
}

// A DROP and a new DEFINE of the name between the drain locks and the row
// lock change the transforms it names; the ALTER then starts over, this often.
constexpr int kBeginTries = 3;

// Locks in the order of spec/engine.md "Lock order": the drain locks of the
// transforms it changes (alter_lock.h), then the tables its plan locks, then
// catalog rows. `adds`: the ALTER may add or change a column.
Result<Altering> Begin(pg::Connection& conn, const std::string& schema,
                       const grammar::QualifiedName& target, bool adds = false) {
  for (int attempt = 1;; ++attempt) {
    auto tx = pg::Transaction::Begin(conn);
    if (!tx.ok()) return tx.status();
    TRELLIS_RETURN_IF_ERROR(catalog::CheckMigrated(conn, schema));
    auto locked = LockAlteredTransforms(conn, schema, target.name);
    if (!locked.ok()) return locked.status();
    TRELLIS_RETURN_IF_ERROR(LockBeforeCatalog(conn, schema, target.name, adds));
    auto t = catalog::LoadTransform(conn, schema, target.name, /*lock=*/true);
    if (!t.ok()) return t.status();
    TRELLIS_RETURN_IF_ERROR(catalog::RefuseHiddenPart(conn, schema, t.value()));
    if (target.schema && *target.schema != t->target_schema) {
      return Status::NotFound("no transform named " + grammar::RenderQualified(target));
    }
    auto now = AlteredTransformIds(conn, schema, target.name);
    if (!now.ok()) return now.status();
    if (now.value() == locked.value()) {
      auto plan = plan::Bind(t.value(), schema);
      if (!plan.ok()) return plan.status();
      return Altering{std::move(tx.value()), std::move(t.value()), std::move(plan.value())};
    }
    if (attempt == kBeginTries) {
      return Status::Timeout("transform " + grammar::RenderQualified(target) +
                             " was dropped and defined again while this ALTER waited for its "
                             "drains, " +
                             std::to_string(kBeginTries) + " times: apply the ALTER again");
    }
    // Rolled back here (the transaction's destructor): nothing was changed.
  }
}

Result<ApplyResult> Finish(Altering& a) {
  TRELLIS_RETURN_IF_ERROR(a.tx->Commit());
  return ApplyResult{"altered", grammar::RenderTransformName(a.transform.name()), {}};
}

}  // namespace

Result<ApplyResult> AlterAddColumn(pg::Connection& conn, const std::string& schema,
                                   const grammar::AlterAddColumnStmt& stmt) {
  auto a = Begin(conn, schema, stmt.target, /*adds=*/true);
  if (!a.ok()) return a.status();
  const plan::AlterPlan& alter = *a->plan;
  TRELLIS_RETURN_IF_ERROR(alter.AddColumn(conn, schema, a->transform, stmt.column));
  return Finish(a.value());
}

Result<ApplyResult> AlterDropColumn(pg::Connection& conn, const std::string& schema,
                                    const grammar::AlterDropColumnStmt& stmt) {
  auto a = Begin(conn, schema, stmt.target);
  if (!a.ok()) return a.status();
  const plan::AlterPlan& alter = *a->plan;
  TRELLIS_RETURN_IF_ERROR(alter.DropColumn(conn, schema, a->transform, stmt.column));
  return Finish(a.value());
}

Result<ApplyResult> AlterColumn(pg::Connection& conn, const std::string& schema,
                                const grammar::AlterColumnStmt& stmt) {
  auto a = Begin(conn, schema, stmt.target, /*adds=*/true);
  if (!a.ok()) return a.status();
  const plan::AlterPlan& alter = *a->plan;
  TRELLIS_RETURN_IF_ERROR(alter.AlterColumn(conn, schema, a->transform, stmt.column));
  return Finish(a.value());
}

}  // namespace trellis::statements
