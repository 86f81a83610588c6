// Framing of spec/protocol.md section 1: a 4-byte big-endian length, then the
// body. No I/O: callers feed bytes they read and write what Encode returns.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace trellis::protocol {

inline constexpr size_t kFrameHeaderBytes = 4;
inline constexpr size_t kMaxFrameBytes = 16u * 1024u * 1024u;

// Assembles frames from reads of any size. Every length prefix is checked
// against the maximum as soon as its 4 bytes are in, before any byte after it
// is buffered, so the buffer never holds more than the complete frames not yet
// taken plus one partial frame of at most the maximum size.
// Not thread-safe: one reader per input stream.
class FrameReader {
 public:
  explicit FrameReader(size_t max_frame_bytes = kMaxFrameBytes);

  FrameReader(const FrameReader&) = delete;
  FrameReader& operator=(const FrameReader&) = delete;

  // Appends bytes. Returns false once a length prefix over the maximum has
  // been seen: framing is lost for good, the bytes from that prefix on are
  // dropped, and later calls keep returning false. Frames completed before
  // the bad prefix are still returned by Next().
  bool Feed(std::string_view bytes);

  // The next complete frame body (possibly empty), or nullopt when more bytes
  // are needed (or, after framing was lost, when no complete frame is left).
  std::optional<std::string> Next();

  // Bytes held that Next() has not returned: complete frames not yet taken
  // plus the partial frame at the end (its header included).
  size_t buffered() const { return buffer_.size() - consumed_; }

  bool framing_lost() const { return framing_lost_; }
  // The oversized length that lost framing (0 if none).
  uint64_t bad_length() const { return bad_length_; }

 private:
  size_t max_frame_bytes_;
  std::string buffer_;
  size_t consumed_ = 0;  // bytes of buffer_ already returned by Next()
  size_t checked_ = 0;   // start of the first frame not known to be complete
  bool framing_lost_ = false;
  uint64_t bad_length_ = 0;
};

// Prefixes a body with its big-endian length.
// REQUIRES: body.size() <= kMaxFrameBytes.
std::string EncodeFrame(std::string_view body);

}  // namespace trellis::protocol
