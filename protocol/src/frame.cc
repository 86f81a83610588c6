// Framing of spec/protocol.md section 1.
#include "trellis/protocol/frame.h"

#include <algorithm>
#include <cassert>

namespace trellis::protocol {
namespace {

// Taken frames are erased from the front of the buffer once they add up to
// this much, so a long stream of small frames does not shift bytes per frame.
constexpr size_t kCompactBytes = 64 * 1024;

uint32_t ReadBigEndian32(const char* p) {
  const auto* u = reinterpret_cast<const unsigned char*>(p);
  return (uint32_t{u[0]} << 24) | (uint32_t{u[1]} << 16) | (uint32_t{u[2]} << 8) | uint32_t{u[3]};
}

}  // namespace

FrameReader::FrameReader(size_t max_frame_bytes) : max_frame_bytes_(max_frame_bytes) {}

bool FrameReader::Feed(std::string_view bytes) {
  if (framing_lost_) return false;
  // Each pass completes the header or the body of the frame at checked_, so
  // a length is judged before a single byte of its body is kept.
  while (true) {
    const size_t have = buffer_.size() - checked_;
    if (have < kFrameHeaderBytes) {
      if (bytes.empty()) return true;
      const size_t take = std::min(kFrameHeaderBytes - have, bytes.size());
      buffer_.append(bytes.substr(0, take));
      bytes.remove_prefix(take);
      if (buffer_.size() - checked_ < kFrameHeaderBytes) return true;
      const uint32_t length = ReadBigEndian32(buffer_.data() + checked_);
      if (length > max_frame_bytes_) {
        framing_lost_ = true;
        bad_length_ = length;
        buffer_.resize(checked_);
        return false;
      }
      continue;
    }
    const uint32_t length = ReadBigEndian32(buffer_.data() + checked_);
    const size_t body_have = have - kFrameHeaderBytes;
    const size_t take = std::min<size_t>(length - body_have, bytes.size());
    buffer_.append(bytes.substr(0, take));
    bytes.remove_prefix(take);
    if (body_have + take < length) return true;
    checked_ += kFrameHeaderBytes + length;
  }
}

std::optional<std::string> FrameReader::Next() {
  if (consumed_ >= checked_) return std::nullopt;
  const uint32_t length = ReadBigEndian32(buffer_.data() + consumed_);
  if (consumed_ == 0 && kFrameHeaderBytes + length == buffer_.size()) {
    // The usual case, one frame and nothing after it: the buffer becomes
    // the body rather than being copied (a frame may be a megabyte).
    std::string body = std::move(buffer_);
    body.erase(0, kFrameHeaderBytes);
    buffer_ = std::string();
    consumed_ = checked_ = 0;
    return body;
  }
  std::string body = buffer_.substr(consumed_ + kFrameHeaderBytes, length);
  consumed_ += kFrameHeaderBytes + length;
  if (consumed_ == buffer_.size()) {
    // A large frame grew the buffer; clear() alone would keep that memory
    // for the life of the port.
    if (buffer_.capacity() > kCompactBytes) {
      std::string().swap(buffer_);
    } else {
      buffer_.clear();
    }
    consumed_ = checked_ = 0;
  } else if (consumed_ >= kCompactBytes) {
    buffer_.erase(0, consumed_);
    checked_ -= consumed_;
    consumed_ = 0;
  }
  return body;
}

std::string EncodeFrame(std::string_view body) {
  assert(body.size() <= kMaxFrameBytes);
  const auto length = static_cast<uint32_t>(body.size());
  std::string frame;
  frame.reserve(kFrameHeaderBytes + body.size());
  frame.push_back(static_cast<char>(length >> 24));
  frame.push_back(static_cast<char>(length >> 16));
  frame.push_back(static_cast<char>(length >> 8));
  frame.push_back(static_cast<char>(length));
  frame.append(body);
  return frame;
}

}  // namespace trellis::protocol
