#include "roles.h"

#include <catch2/catch.hpp>

namespace trellis::test {

RoleFixture::RoleFixture(std::string engine, std::vector<std::string> others) {
  roles_.push_back(engine);
  roles_.insert(roles_.end(), others.begin(), others.end());
  std::string script;
  for (const auto& role : roles_) script += "CREATE ROLE " + role + " LOGIN;";
  script += "GRANT CREATE ON DATABASE " + f.Scalar("SELECT quote_ident(current_database())") +
            " TO " + engine + "; GRANT CREATE ON SCHEMA public TO " + engine + ";";
  f.Sql(script);
  auto s = Session::Open(OptionsAs(engine));
  REQUIRE(s.ok());
  session = std::move(s.value());
  REQUIRE(session->Migrate().ok());
}

RoleFixture::~RoleFixture() {
  workers.reset();
  session.reset();
  logins_.clear();
  // No REQUIRE here: a destructor must not throw.
  for (auto it = roles_.rbegin(); it != roles_.rend(); ++it) {
    (void)f.conn().ExecScript("DROP OWNED BY " + *it + " CASCADE; DROP ROLE " + *it);
  }
}

ConnectOptions RoleFixture::OptionsAs(const std::string& role) const {
  ConnectOptions o = f.Options();
  const std::string from = "postgres@";
  const size_t at = o.url.find(from);
  REQUIRE(at != std::string::npos);
  o.url.replace(at, from.size(), role + "@");
  return o;
}

pg::Connection& RoleFixture::Login(const std::string& role) {
  auto& login = logins_[role];
  if (!login) {
    auto opened = pg::Connection::Open(OptionsAs(role).url, "role_fixture");
    REQUIRE(opened.ok());
    login = std::move(opened.value());
  }
  return *login;
}

Status RoleFixture::As(const std::string& role, const std::string& statement) {
  return Login(role).ExecScript(statement);
}

Result<std::string> RoleFixture::ScalarAs(const std::string& role, const std::string& query) {
  auto rows = Login(role).Query(query);
  if (!rows.ok()) return rows.status();
  REQUIRE(rows->size() == 1);
  return rows->text(0, 0);
}

void RoleFixture::StartWorkers() {
  workers = BackgroundWorkers::Start(OptionsAs(roles_.front()), true, 1);
}

}  // namespace trellis::test
