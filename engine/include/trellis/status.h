// Status and Result: how the engine reports expected failures. A Status is
// ok or carries one code from the closed set of spec/protocol.md section 6, a
// message that names the problem (and the fix, where there is one), and the
// database's SQLSTATE/detail/hint when it gave them.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace trellis {

enum class Code {
  kOk,
  kValidation,
  kNotFound,
  kAlreadyExists,
  kNotMigrated,
  kUnsupported,
  kTimeout,
  kConnection,
  kDatabase,
  kProtocol,
  kInternal,
};

// The wire name of a code ("validation", ...); "ok" for kOk.
std::string_view CodeName(Code code);

class [[nodiscard]] Status {
 public:
  Status() = default;  // ok

  static Status OK() { return Status(); }
  static Status Validation(std::string msg) { return Status(Code::kValidation, std::move(msg)); }
  static Status NotFound(std::string msg) { return Status(Code::kNotFound, std::move(msg)); }
  static Status AlreadyExists(std::string msg) {
    return Status(Code::kAlreadyExists, std::move(msg));
  }
  static Status NotMigrated(std::string msg) { return Status(Code::kNotMigrated, std::move(msg)); }
  static Status Unsupported(std::string msg) { return Status(Code::kUnsupported, std::move(msg)); }
  static Status Timeout(std::string msg) { return Status(Code::kTimeout, std::move(msg)); }
  static Status Connection(std::string msg) { return Status(Code::kConnection, std::move(msg)); }
  static Status Database(std::string msg) { return Status(Code::kDatabase, std::move(msg)); }
  static Status Protocol(std::string msg) { return Status(Code::kProtocol, std::move(msg)); }
  static Status Internal(std::string msg) { return Status(Code::kInternal, std::move(msg)); }

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }

  // Database diagnostics, when the failure came from PostgreSQL.
  std::optional<std::string> sqlstate;
  std::optional<std::string> detail;
  std::optional<std::string> hint;

  // "code: message", for logs and tests.
  std::string ToString() const;

 private:
  Status(Code code, std::string message) : code_(code), message_(std::move(message)) {}
  Code code_ = Code::kOk;
  std::string message_;
};

// A value or the Status saying why there is none.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}
  Result(Status status) : v_(std::move(status)) {}

  bool ok() const { return std::holds_alternative<T>(v_); }
  // REQUIRES: ok().
  T& value() { return std::get<T>(v_); }
  const T& value() const { return std::get<T>(v_); }
  T* operator->() { return &value(); }
  T& operator*() { return value(); }
  // REQUIRES: !ok().
  const Status& status() const { return std::get<Status>(v_); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace trellis

// Returns early from the enclosing function when `expr` (a Status) failed.
#define TRELLIS_RETURN_IF_ERROR(expr)   \
  do {                                  \
    ::trellis::Status status_ = (expr); \
    if (!status_.ok()) return status_;  \
  } while (0)
