// Capture files: every frame a port read or wrote, with its time. The format
// is specified in spec/protocol.md section 9; this is its only implementation
// in the port.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "trellis/status.h"

namespace trellis::port {

inline constexpr std::string_view kCaptureMagic = "TRLSCAP1";

enum class Direction : uint8_t { kIn = 0, kOut = 1 };  // in: BEAM -> port

struct CaptureRecord {
  Direction direction = Direction::kIn;
  uint64_t micros = 0;  // since the port started (monotonic clock)
  std::string body;     // the frame body, without its length prefix
};

// Appends records to a capture file. Not thread-safe: the io thread alone
// writes it. Each record is flushed to the file as it is written, so a port
// that crashes leaves every frame up to the crash behind.
class CaptureWriter {
 public:
  // Creates (or truncates) `path` and writes the magic. `start` is time zero.
  static Result<std::unique_ptr<CaptureWriter>> Open(const std::string& path,
                                                     std::chrono::steady_clock::time_point start);
  ~CaptureWriter();
  CaptureWriter(const CaptureWriter&) = delete;
  CaptureWriter& operator=(const CaptureWriter&) = delete;

  void Record(Direction direction, std::string_view body);

 private:
  CaptureWriter(std::FILE* file, std::chrono::steady_clock::time_point start)
      : file_(file), start_(start) {}
  std::FILE* file_;
  std::chrono::steady_clock::time_point start_;
  bool failed_ = false;  // a write failed: logged once, recording stops
};

struct Capture {
  std::vector<CaptureRecord> records;
  // The file ended inside a record (a port killed mid-write); `records`
  // holds every complete record before it.
  bool truncated = false;
};

// Reads a whole capture file. An error when the file cannot be read or does
// not start with the magic.
Result<Capture> ReadCapture(const std::string& path);

}  // namespace trellis::port
