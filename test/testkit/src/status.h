#pragma once

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace trellis::testkit {

// The outcome of an operation that can fail in an expected way. An aborted
// status means a stop was requested (signal, stdin EOF, parent death) while
// the operation ran: callers treat it as a normal stop, not a failure.
// Thread-safety: a plain value; const methods may be called concurrently.
class Status {
 public:
  static Status Ok() { return Status(Code::kOk, {}); }
  static Status Error(std::string message) { return Status(Code::kError, std::move(message)); }
  static Status Aborted(std::string reason) { return Status(Code::kAborted, std::move(reason)); }

  bool ok() const { return code_ == Code::kOk; }
  bool aborted() const { return code_ == Code::kAborted; }
  const std::string& message() const { return message_; }

 private:
  enum class Code { kOk, kError, kAborted };

  Status(Code code, std::string message) : code_(code), message_(std::move(message)) {}

  Code code_;
  std::string message_;
};

// A value, or the non-ok Status explaining why there is none.
// Thread-safety: a plain value.
template <typename T>
class Result {
 public:
  Result(T value) : state_(std::move(value)) {}  // NOLINT: implicit by design
  // REQUIRES: !status.ok()
  Result(Status status) : state_(std::move(status)) {  // NOLINT: implicit by design
    assert(!std::get<Status>(state_).ok());
  }

  bool ok() const { return std::holds_alternative<T>(state_); }
  Status status() const { return ok() ? Status::Ok() : std::get<Status>(state_); }

  // REQUIRES: ok()
  T& value() {
    assert(ok());
    return std::get<T>(state_);
  }
  const T& value() const {
    assert(ok());
    return std::get<T>(state_);
  }

 private:
  std::variant<T, Status> state_;
};

}  // namespace trellis::testkit
