#pragma once

#include <chrono>
#include <optional>
#include <string>

namespace trellis::testkit::test {

// Reads newline-terminated lines from a file descriptor with a deadline.
// Does not own the descriptor. Thread-safety: not thread-safe.
class LineReader {
 public:
  explicit LineReader(int fd) : fd_(fd) {}

  // The next line without its '\n'; nullopt on EOF or timeout before one.
  std::optional<std::string> ReadLine(std::chrono::milliseconds timeout);

  // Everything left until EOF (or the timeout), including buffered bytes.
  std::string ReadToEof(std::chrono::milliseconds timeout);

 private:
  // Reads what is available within `timeout`; false on EOF, error or timeout.
  bool Fill(std::chrono::milliseconds timeout);

  int fd_;
  std::string buffer_;
};

}  // namespace trellis::testkit::test
