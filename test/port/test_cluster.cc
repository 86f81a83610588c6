#include "test_cluster.h"

#include <libpq-fe.h>

#include <stdexcept>

#include "throwaway_cluster.h"

namespace trellis::port_test {

const std::string& ClusterUrl() {
  static const trellis::test::ThrowawayCluster cluster(TRELLIS_TESTKIT_BINARY);
  return cluster.url();
}

std::string WithPassword(const std::string& url, const std::string& password) {
  // postgresql://postgres@host... -> postgresql://postgres:password@host...
  const size_t at = url.find('@');
  if (at == std::string::npos) throw std::runtime_error("no user in " + url);
  return url.substr(0, at) + ":" + password + url.substr(at);
}

PgClient::PgClient(const std::string& url) : conn_(PQconnectdb(url.c_str())) {
  if (PQstatus(conn_) != CONNECTION_OK) {
    std::string message = PQerrorMessage(conn_);
    PQfinish(conn_);
    throw std::runtime_error("cannot connect: " + message);
  }
}

PgClient::~PgClient() { PQfinish(conn_); }

std::vector<std::optional<std::string>> PgClient::Column(const std::string& sql) {
  PGresult* res = PQexec(conn_, sql.c_str());
  const auto status = PQresultStatus(res);
  if (status != PGRES_TUPLES_OK && status != PGRES_COMMAND_OK) {
    std::string message = PQresultErrorMessage(res);
    PQclear(res);
    throw std::runtime_error(sql + ": " + message);
  }
  std::vector<std::optional<std::string>> column;
  for (int r = 0; r < PQntuples(res); ++r) {
    if (PQgetisnull(res, r, 0)) {
      column.emplace_back(std::nullopt);
    } else {
      column.emplace_back(PQgetvalue(res, r, 0));
    }
  }
  PQclear(res);
  return column;
}

std::optional<std::string> PgClient::Scalar(const std::string& sql) {
  auto column = Column(sql);
  return column.empty() ? std::nullopt : column.front();
}

}  // namespace trellis::port_test
