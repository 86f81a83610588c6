// pg/resolve.h: how resolved addresses are handed to libpq. The resolver is a
// table here; the c-ares resolver itself is exercised by the release binary
// in a root without glibc (test/packaging/release_binaries_test.exs).
#include "pg/resolve.h"

#include <catch2/catch.hpp>
#include <map>

using trellis::Result;
using trellis::Status;
using trellis::pg::ConnParams;
using trellis::pg::PinHostAddresses;

namespace {

Result<std::vector<std::string>> FromTable(const std::string& name) {
  static const std::map<std::string, std::vector<std::string>> table = {
      {"db.example", {"10.0.0.1", "fd00::1"}},
      {"replica.example", {"10.0.0.2"}},
  };
  auto it = table.find(name);
  if (it == table.end())
    return Status::Connection("could not translate host name \"" + name + "\"");
  return it->second;
}

ConnParams Pin(std::string_view hosts, std::string_view ports) {
  auto pinned = PinHostAddresses(hosts, ports, FromTable);
  REQUIRE(pinned.ok());
  return *pinned;
}

}  // namespace

TEST_CASE("a name becomes one entry per address, host kept for TLS and .pgpass", "[resolve]") {
  CHECK(Pin("db.example", "5433") ==
        ConnParams{{"host", "db.example,db.example"}, {"hostaddr", "10.0.0.1,fd00::1"}});
}

TEST_CASE("a port list is expanded alongside its hosts", "[resolve]") {
  CHECK(Pin("db.example,replica.example", "5433,5434") ==
        ConnParams{{"host", "db.example,db.example,replica.example"},
                   {"hostaddr", "10.0.0.1,fd00::1,10.0.0.2"},
                   {"port", "5433,5433,5434"}});
}

TEST_CASE("socket directories keep an empty hostaddr; all sockets pin nothing", "[resolve]") {
  CHECK(Pin("/var/run/postgresql,replica.example", "") ==
        ConnParams{{"host", "/var/run/postgresql,replica.example"}, {"hostaddr", ",10.0.0.2"}});
  CHECK(Pin("/tmp", "5432").empty());
  CHECK(Pin("", "").empty());
}

TEST_CASE("an unresolvable name is skipped unless no host is left", "[resolve]") {
  CHECK(Pin("nowhere.example,replica.example", "") ==
        ConnParams{{"host", "replica.example"}, {"hostaddr", "10.0.0.2"}});
  auto none = PinHostAddresses("nowhere.example", "", FromTable);
  REQUIRE_FALSE(none.ok());
  CHECK(none.status().message().find("nowhere.example") != std::string::npos);
}

TEST_CASE("a port list that does not match the hosts is left for libpq to refuse", "[resolve]") {
  CHECK(Pin("db.example,replica.example", "1,2,3").empty());
}
