// The baseline for the port runtime benchmark: the least an Erlang port can
// do. Reads {packet, 4} frames on fd 3 and writes each straight back on fd 4,
// exactly the transport trellis-port uses, with no decoding at all.
#include <unistd.h>

#include <cstdint>
#include <vector>

namespace {

bool ReadFull(int fd, uint8_t* p, size_t n) {
  while (n > 0) {
    ssize_t r = read(fd, p, n);
    if (r <= 0) return false;
    p += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

bool WriteFull(int fd, const uint8_t* p, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

}  // namespace

int main() {
  constexpr int kIn = 3;
  constexpr int kOut = 4;
  constexpr uint32_t kMaxFrame = 16u * 1024u * 1024u;
  std::vector<uint8_t> frame;
  uint8_t header[4];
  while (ReadFull(kIn, header, sizeof header)) {
    uint32_t len = (uint32_t{header[0]} << 24) | (uint32_t{header[1]} << 16) |
                   (uint32_t{header[2]} << 8) | uint32_t{header[3]};
    if (len > kMaxFrame) return 3;
    frame.resize(sizeof header + len);
    std::copy(header, header + sizeof header, frame.begin());
    if (!ReadFull(kIn, frame.data() + sizeof header, len)) return 0;
    if (!WriteFull(kOut, frame.data(), frame.size())) return 0;
  }
  return 0;
}
