// The throwaway PostgreSQL cluster the port tests share, and a libpq session
// of the tests' own (to hold locks and look at pg_stat_activity).
#pragma once

#include <optional>
#include <string>
#include <vector>

typedef struct pg_conn PGconn;

namespace trellis::port_test {

// The URL of a cluster started by trellis-testkit on first use and stopped
// when the test binary exits (closing the testkit's stdin stops it).
// Aborts the test binary, with a message, when the testkit cannot start one.
const std::string& ClusterUrl();

// The URL with user:password credentials written in (the cluster trusts
// every local connection, so the password is accepted and ignored).
std::string WithPassword(const std::string& url, const std::string& password);

// One libpq connection. Not thread-safe.
class PgClient {
 public:
  explicit PgClient(const std::string& url);  // throws on failure
  ~PgClient();
  PgClient(const PgClient&) = delete;
  PgClient& operator=(const PgClient&) = delete;

  // The first column of every row (NULL as nullopt); throws on an error.
  std::vector<std::optional<std::string>> Column(const std::string& sql);
  std::optional<std::string> Scalar(const std::string& sql);

 private:
  PGconn* conn_;
};

}  // namespace trellis::port_test
