// The progress signal await_converged sleeps on (workers/progress.h): a
// commit noted by a worker wakes a waiter at once, not at its timeout.
#include <catch2/catch.hpp>

#include <chrono>
#include <future>
#include <thread>

#include "workers/progress.h"

namespace trellis::workers {
namespace {

using std::chrono::milliseconds;

TEST_CASE("a noted commit wakes a waiter long before its timeout", "[workers][progress]") {
  const uint64_t seen = ProgressMark();
  const auto started = std::chrono::steady_clock::now();
  auto waiter =
      std::async(std::launch::async, [&] { return AwaitProgress(seen, milliseconds(60000)); });
  std::this_thread::sleep_for(milliseconds(20));
  NoteProgress();
  // Ready within 30 s of a 60 s wait: only the wake can make it so.
  REQUIRE(waiter.wait_for(std::chrono::seconds(30)) == std::future_status::ready);
  CHECK(waiter.get() > seen);
  CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(30));
}

TEST_CASE("progress noted before the wait began is not waited for", "[workers][progress]") {
  const uint64_t seen = ProgressMark();
  NoteProgress();
  // The commit came between the look and the wait: the wait returns at once.
  CHECK(AwaitProgress(seen, milliseconds(60000)) > seen);
}

TEST_CASE("without progress a wait ends at its timeout", "[workers][progress]") {
  const uint64_t seen = ProgressMark();
  CHECK(AwaitProgress(seen, milliseconds(5)) == seen);
}

}  // namespace
}  // namespace trellis::workers
