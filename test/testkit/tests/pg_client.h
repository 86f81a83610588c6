#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

struct pg_conn;

namespace trellis::testkit::test {

// A libpq connection for tests, closed on destruction.
// Thread-safety: not thread-safe.
class PgClient {
 public:
  // Connects to `url`; on failure returns nullptr and sets *error.
  static std::unique_ptr<PgClient> Connect(const std::string& url, std::string* error);
  ~PgClient();
  PgClient(const PgClient&) = delete;
  PgClient& operator=(const PgClient&) = delete;

  // Runs a statement returning no rows; false with error() set on failure.
  bool Execute(const std::string& sql);
  // The first column of every row `sql` returns (NULL as "NULL"), or nullopt
  // with error() set.
  std::optional<std::vector<std::string>> Column(const std::string& sql);
  // The single value `sql` returns, or nullopt with error() set.
  std::optional<std::string> Scalar(const std::string& sql);

  const std::string& error() const { return error_; }

 private:
  explicit PgClient(pg_conn* conn) : conn_(conn) {}

  pg_conn* const conn_;
  std::string error_;
};

}  // namespace trellis::testkit::test
