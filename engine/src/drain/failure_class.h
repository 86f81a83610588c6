// The one failure classifier of the unit executor (unit_executor.h): what a
// failed unit of work means, and so what happens to it.
#pragma once

#include <string_view>

#include "trellis/status.h"

namespace trellis::drain {

enum class FailureClass {
  // The SQL no longer fits the tables (schema_change.h): pause the transform.
  kSchemaChange,
  // A value the definition cannot compute or the target cannot hold
  // (SQLSTATE class 22 data exception, 23 integrity constraint, and errors
  // raised by functions the expressions call: 2F, 38, 39, P0): narrow it
  // to the failing keys and charge it (a class 23 error only ever to the
  // key: IsTargetRefusal).
  kDataError,
  // The connection or a lock (a lost connection, 08; deadlock or
  // serialization failure, 40; lock not available, 55P03; a cancelled or
  // timed-out statement, 57014; the server out of resources or shutting
  // down, 53 and 57P): retry the unit later, unchanged.
  kTransient,
  // Anything else (a privilege revoked on the target, say): charged as it
  // is, without narrowing, and retried with backoff.
  kOther,
};

FailureClass Classify(const Status& error);

// Whether `error` is the target refusing a row: an integrity constraint
// violation (SQLSTATE class 23: a CHECK, NOT NULL, unique or foreign key of
// the target). No value expression raises one, so it is never charged to a
// column (which would write NULL where the CHECK passes on NULL, a value no
// source row holds): the key is held, its row left as it was.
bool IsTargetRefusal(const Status& error);

std::string_view FailureClassName(FailureClass c);

}  // namespace trellis::drain
