#include "catalog/composite.h"

#include "sql/quote.h"
#include "sql/row_reader.h"

namespace trellis::catalog {

Result<Composite> LoadComposite(pg::Connection& conn, const std::string& schema, Transform owner,
                                bool lock) {
  Composite out{std::move(owner), {}};
  // By id: the record names each stage; a stage's name would be looked up
  // again, and a name pattern is exactly what step 15 replaced.
  auto ids = conn.Query(sql::WithSchema("SELECT id FROM {schema}.transforms WHERE owner_id = "
                                        "$1::int ORDER BY stage_order, id",
                                        schema),
                        {std::to_string(out.owner.id)});
  if (!ids.ok()) return ids.status();
  for (size_t r = 0; r < ids->size(); ++r) {
    auto stage = LoadTransformById(conn, schema, sql::RowReader(ids.value(), r).Int(0), lock);
    if (!stage.ok()) return stage.status();
    out.stages.push_back(std::move(stage.value()));
  }
  return out;
}

}  // namespace trellis::catalog
