#include "line_reader.h"

#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

namespace trellis::testkit::test {

using std::chrono::duration_cast;
using std::chrono::milliseconds;
using std::chrono::steady_clock;

namespace {

milliseconds Remaining(steady_clock::time_point deadline) {
  const auto left = duration_cast<milliseconds>(deadline - steady_clock::now());
  return left.count() > 0 ? left : milliseconds(0);
}

}  // namespace

std::optional<std::string> LineReader::ReadLine(milliseconds timeout) {
  const auto deadline = steady_clock::now() + timeout;
  for (;;) {
    if (const std::size_t newline = buffer_.find('\n'); newline != std::string::npos) {
      std::string line = buffer_.substr(0, newline);
      buffer_.erase(0, newline + 1);
      return line;
    }
    if (!Fill(Remaining(deadline))) return std::nullopt;
  }
}

std::string LineReader::ReadToEof(milliseconds timeout) {
  const auto deadline = steady_clock::now() + timeout;
  while (Fill(Remaining(deadline))) {
  }
  return std::exchange(buffer_, {});
}

bool LineReader::Fill(milliseconds timeout) {
  pollfd fd{fd_, POLLIN, 0};
  int ready;
  do {
    ready = poll(&fd, 1, static_cast<int>(timeout.count()));
  } while (ready < 0 && errno == EINTR);
  if (ready <= 0) return false;
  char chunk[4096];
  ssize_t got;
  do {
    got = read(fd_, chunk, sizeof chunk);
  } while (got < 0 && errno == EINTR);
  if (got <= 0) return false;
  buffer_.append(chunk, static_cast<std::size_t>(got));
  return true;
}

}  // namespace trellis::testkit::test
