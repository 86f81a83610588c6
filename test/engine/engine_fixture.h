// A fresh database per test on one shared throwaway cluster, plus helpers
// for running SQL and comparing a target with its definition's query.
#pragma once

#include <memory>
#include <string>

#include "pg/connection.h"
#include "trellis/engine.h"
#include "trellis/workers.h"

namespace trellis::test {

class EngineFixture {
 public:
  EngineFixture();
  ~EngineFixture();

  // Options for a handle on this test's database.
  ConnectOptions Options(const std::string& schema = "trellis") const;
  // A session on this test's database (migrated when `migrate`).
  std::unique_ptr<Session> OpenSession(bool migrate = true, const std::string& schema = "trellis");
  // Runs SQL on the test's own connection; fails the test on error.
  void Sql(const std::string& statement);
  // The single value of a one-row, one-column query.
  std::string Scalar(const std::string& query);
  // Rows in `target` that differ from `query` (both directions, as a count).
  long Differences(const std::string& target, const std::string& query);
  // Waits for convergence of every write committed so far; fails on timeout.
  void AwaitConverged(Session& session, int timeout_ms = 30000);

  pg::Connection& conn() { return *conn_; }
  const std::string& url() const { return url_; }

 private:
  std::string url_;
  std::unique_ptr<pg::Connection> conn_;
};

}  // namespace trellis::test
