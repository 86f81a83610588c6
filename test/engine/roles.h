// Roles for privilege tests: an engine role that owns the catalog and the
// tables it creates, and other login roles with only what a test grants
// them. Roles are the cluster's, not the test database's: each is dropped
// with everything it owns when the fixture goes.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine_fixture.h"
#include "pg/connection.h"
#include "trellis/engine.h"
#include "trellis/workers.h"

namespace trellis::test {

class RoleFixture {
 public:
  // Creates `engine` (CREATE on the database and on schema public) and
  // each of `others` as plain login roles, then opens and migrates a
  // session as `engine`.
  RoleFixture(std::string engine, std::vector<std::string> others);
  ~RoleFixture();

  // The fixture's database as `role` (the testkit trusts local logins).
  ConnectOptions OptionsAs(const std::string& role) const;
  // Runs `statement` in a session logged in as `role`, one per role for the
  // fixture's life (so its settings and temporary objects last). A login,
  // not SET ROLE from a superuser's session: PostgreSQL checks SET ROLE and
  // SET SESSION AUTHORIZATION against the session's user.
  Status As(const std::string& role, const std::string& statement);
  // The first value `query` returns in `role`'s session, or the failure.
  Result<std::string> ScalarAs(const std::string& role, const std::string& query);
  // Starts the staging worker and a drain worker as the engine role.
  void StartWorkers();

  EngineFixture f;
  std::unique_ptr<Session> session;  // as the engine role
  std::unique_ptr<BackgroundWorkers> workers;

 private:
  pg::Connection& Login(const std::string& role);

  std::vector<std::string> roles_;  // every role made, the engine's first
  std::map<std::string, std::unique_ptr<pg::Connection>> logins_;
};

}  // namespace trellis::test
