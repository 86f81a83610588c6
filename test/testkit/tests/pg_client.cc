#include "pg_client.h"

#include <libpq-fe.h>

namespace trellis::testkit::test {

std::unique_ptr<PgClient> PgClient::Connect(const std::string& url, std::string* error) {
  const char* keys[] = {"dbname", "connect_timeout", nullptr};
  const char* values[] = {url.c_str(), "10", nullptr};
  PGconn* conn = PQconnectdbParams(keys, values, 1);
  if (PQstatus(conn) != CONNECTION_OK) {
    *error = PQerrorMessage(conn);
    PQfinish(conn);
    return nullptr;
  }
  return std::unique_ptr<PgClient>(new PgClient(conn));
}

PgClient::~PgClient() { PQfinish(conn_); }

bool PgClient::Execute(const std::string& sql) {
  PGresult* result = PQexec(conn_, sql.c_str());
  const bool ok = PQresultStatus(result) == PGRES_COMMAND_OK;
  if (!ok) error_ = PQerrorMessage(conn_);
  PQclear(result);
  return ok;
}

std::optional<std::vector<std::string>> PgClient::Column(const std::string& sql) {
  PGresult* result = PQexec(conn_, sql.c_str());
  if (PQresultStatus(result) != PGRES_TUPLES_OK) {
    error_ = PQerrorMessage(conn_);
    PQclear(result);
    return std::nullopt;
  }
  std::vector<std::string> values;
  for (int row = 0; row < PQntuples(result); ++row) {
    values.push_back(PQgetisnull(result, row, 0) ? "NULL" : PQgetvalue(result, row, 0));
  }
  PQclear(result);
  return values;
}

std::optional<std::string> PgClient::Scalar(const std::string& sql) {
  std::optional<std::vector<std::string>> values = Column(sql);
  if (!values) return std::nullopt;
  if (values->size() != 1) {
    error_ = "expected one row from '" + sql + "', got " + std::to_string(values->size());
    return std::nullopt;
  }
  return values->front();
}

}  // namespace trellis::testkit::test
