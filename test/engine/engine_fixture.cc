#include "engine_fixture.h"

#include <catch2/catch.hpp>

#include <atomic>

#include "throwaway_cluster.h"

namespace trellis::test {
namespace {

ThrowawayCluster& Cluster() {
  static ThrowawayCluster cluster(TRELLIS_TESTKIT_BINARY);
  return cluster;
}

std::string NextDatabase() {
  static std::atomic<int> n{0};
  return "engine_test_" + std::to_string(n.fetch_add(1));
}

}  // namespace

EngineFixture::EngineFixture() {
  auto admin = pg::Connection::Open(Cluster().url(), "engine_test");
  REQUIRE(admin.ok());
  const std::string db = NextDatabase();
  REQUIRE(admin.value()->Exec("CREATE DATABASE " + db).ok());
  url_ = Cluster().UrlFor(db);
  auto conn = pg::Connection::Open(url_, "engine_test");
  REQUIRE(conn.ok());
  conn_ = std::move(conn.value());
}

EngineFixture::~EngineFixture() = default;

ConnectOptions EngineFixture::Options(const std::string& schema) const {
  ConnectOptions o;
  o.url = url_;
  o.schema = schema;
  return o;
}

std::unique_ptr<Session> EngineFixture::OpenSession(bool migrate, const std::string& schema) {
  auto s = Session::Open(Options(schema));
  REQUIRE(s.ok());
  if (migrate) REQUIRE(s.value()->Migrate().ok());
  return std::move(s.value());
}

void EngineFixture::Sql(const std::string& statement) {
  Status st = conn_->ExecScript(statement);
  INFO(statement << " -> " << st.ToString());
  REQUIRE(st.ok());
}

std::string EngineFixture::Scalar(const std::string& query) {
  auto rows = conn_->Query(query);
  INFO(query << " -> " << (rows.ok() ? "" : rows.status().ToString()));
  REQUIRE(rows.ok());
  REQUIRE(rows->size() == 1);
  return rows->text(0, 0);
}

long EngineFixture::Differences(const std::string& target, const std::string& query) {
  return std::stol(Scalar("SELECT count(*) FROM ((TABLE " + target + " EXCEPT ALL " + query +
                          ") UNION ALL (" + query + " EXCEPT ALL TABLE " + target + ")) d"));
}

void EngineFixture::AwaitConverged(Session& session, int timeout_ms) {
  auto token = session.WatermarkToken();
  REQUIRE(token.ok());
  auto done = session.AwaitConverged(token.value(), std::chrono::milliseconds(timeout_ms));
  INFO((done.ok() ? "" : done.status().ToString()));
  REQUIRE(done.ok());
  REQUIRE(done.value());
}

}  // namespace trellis::test
