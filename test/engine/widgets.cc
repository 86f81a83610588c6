#include "widgets.h"

#include <catch2/catch.hpp>

#include <chrono>
#include <thread>

namespace trellis::test {

std::string AwaitStatus(Session& s, const std::string& name, const std::string& wanted) {
  std::string status;
  for (int i = 0; i < 200 && status != wanted; ++i) {
    auto st = s.ReadStatus(name);
    if (st.ok()) status = st->status;
    if (status != wanted) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return status;
}

LivePrices::LivePrices(int drains) {
  f.Sql(kWidgets);
  s = f.OpenSession();
  REQUIRE(s->Apply("TRANSFORM a FROM widgets SELECT price AS price", true).ok());
  workers = BackgroundWorkers::Start(f.Options(), true, drains);
  f.AwaitConverged(*s);
}

}  // namespace trellis::test
