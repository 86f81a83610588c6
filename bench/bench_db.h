// One database per benchmark on the shared throwaway cluster, with a
// connection for setup and timing. Failures throw BenchError: a benchmark
// that cannot run its SQL has nothing to report, and unwinding lets the
// cluster's destructor stop the testkit.
#pragma once

#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

#include "pg/connection.h"
#include "throwaway_cluster.h"
#include "trellis/engine.h"
#include "trellis/workers.h"

namespace trellis::bench {

struct BenchError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The columns of every benchmark's source table.
inline constexpr const char* kBenchColumns =
    "(id bigint PRIMARY KEY, v int NOT NULL, w text NOT NULL)";

// A SELECT of rows 1..n for such a table: (g, g % 1000, md5(g)).
std::string BenchRows(long n);

class BenchDb {
 public:
  // Creates database `name` on `cluster` and migrates the catalog in it.
  // `capture_mode` ("triggers", "logical") is set on the catalog as a
  // staging handle's connect option sets it.
  BenchDb(const test::ThrowawayCluster& cluster, const std::string& name,
          const std::string& capture_mode = "triggers");

  const std::string& url() const { return url_; }
  ConnectOptions Options() const;
  Session& session() { return *session_; }
  pg::Connection& conn() { return *conn_; }

  // Runs a script (';'-separated statements); throws on error.
  void Sql(const std::string& script);
  // Creates `table` with kBenchColumns, fills it with BenchRows(rows), and
  // vacuums and analyses it so hint bits and statistics are settled before
  // anything is timed.
  void CreateFilledTable(const std::string& table, long rows);
  // The single value of a one-row, one-column query; throws on error.
  std::string Scalar(const std::string& query);
  // Seconds the statement took, measured around the call (one round trip).
  double TimeSql(const std::string& statement);
  // Applies a grammar statement (TRANSFORM, PAUSE, ...); throws on error.
  void Apply(const std::string& statement);
  // Seconds until every write committed so far has reached its targets;
  // throws when `timeout_ms` passes first.
  double AwaitConverged(int timeout_ms = 120000);
  // The same, or nullopt when `timeout_ms` passes first: for benchmarks
  // that report a backlog the engine could not clear instead of failing.
  std::optional<double> TryAwaitConverged(int timeout_ms);
  // The transform's status, with its backlog figures.
  TransformStatus ReadStatus(const std::string& transform);
  // Staging + 2 drain threads, as in production.
  std::unique_ptr<BackgroundWorkers> StartWorkers();

 private:
  std::string url_;
  std::string capture_mode_;
  std::unique_ptr<pg::Connection> conn_;
  std::unique_ptr<Session> session_;
};

}  // namespace trellis::bench
