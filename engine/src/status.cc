#include "trellis/status.h"

namespace trellis {

std::string_view CodeName(Code code) {
  switch (code) {
    case Code::kOk:
      return "ok";
    case Code::kValidation:
      return "validation";
    case Code::kNotFound:
      return "not_found";
    case Code::kAlreadyExists:
      return "already_exists";
    case Code::kNotMigrated:
      return "not_migrated";
    case Code::kUnsupported:
      return "unsupported";
    case Code::kTimeout:
      return "timeout";
    case Code::kConnection:
      return "connection";
    case Code::kDatabase:
      return "database";
    case Code::kProtocol:
      return "protocol";
    case Code::kInternal:
      return "internal";
  }
  return "internal";
}

std::string Status::ToString() const {
  if (ok()) return "ok";
  return std::string(CodeName(code_)) + ": " + message_;
}

}  // namespace trellis
