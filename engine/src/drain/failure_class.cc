#include "drain/failure_class.h"

#include "drain/schema_change.h"

namespace trellis::drain {
namespace {

bool HasClass(std::string_view sqlstate, std::string_view cls) {
  return sqlstate.substr(0, cls.size()) == cls;
}

}  // namespace

FailureClass Classify(const Status& error) {
  if (error.code() == Code::kConnection) return FailureClass::kTransient;
  if (IsSchemaChange(error)) return FailureClass::kSchemaChange;
  if (!error.sqlstate) return FailureClass::kOther;
  const std::string_view s = *error.sqlstate;
  for (auto cls : {"22", "23", "2F", "38", "39", "P0"}) {
    if (HasClass(s, cls)) return FailureClass::kDataError;
  }
  for (auto cls : {"08", "40", "53", "55P03", "57014", "57P"}) {
    if (HasClass(s, cls)) return FailureClass::kTransient;
  }
  return FailureClass::kOther;
}

bool IsTargetRefusal(const Status& error) {
  return error.sqlstate && HasClass(*error.sqlstate, "23");
}

std::string_view FailureClassName(FailureClass c) {
  switch (c) {
    case FailureClass::kSchemaChange:
      return "schema_change";
    case FailureClass::kDataError:
      return "data_error";
    case FailureClass::kTransient:
      return "transient";
    case FailureClass::kOther:
      return "other";
  }
  return "other";
}

}  // namespace trellis::drain
