#include "capture.h"

#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>

namespace trellis::port {
namespace {

// direction (1) + micros (8) + length (4)
constexpr size_t kRecordHeaderBytes = 13;

void AppendBigEndian(std::string& out, uint64_t value, int bytes) {
  for (int shift = (bytes - 1) * 8; shift >= 0; shift -= 8) {
    out.push_back(static_cast<char>((value >> shift) & 0xff));
  }
}

uint64_t ReadBigEndian(const char* p, int bytes) {
  uint64_t value = 0;
  for (int i = 0; i < bytes; ++i) value = (value << 8) | static_cast<unsigned char>(p[i]);
  return value;
}

std::string EncodeRecordHeader(Direction direction, uint64_t micros, size_t length) {
  std::string header;
  header.reserve(kRecordHeaderBytes);
  header.push_back(static_cast<char>(direction));
  AppendBigEndian(header, micros, 8);
  AppendBigEndian(header, length, 4);
  return header;
}

}  // namespace

Result<std::unique_ptr<CaptureWriter>> CaptureWriter::Open(
    const std::string& path, std::chrono::steady_clock::time_point start) {
  std::FILE* file = std::fopen(path.c_str(), "wb");
  if (!file) {
    return Status::Validation("cannot create the capture file " + path + ": " +
                              std::strerror(errno));
  }
  if (std::fwrite(kCaptureMagic.data(), 1, kCaptureMagic.size(), file) != kCaptureMagic.size() ||
      std::fflush(file) != 0) {
    std::fclose(file);
    return Status::Validation("cannot write the capture file " + path + ": " +
                              std::strerror(errno));
  }
  return std::unique_ptr<CaptureWriter>(new CaptureWriter(file, start));
}

CaptureWriter::~CaptureWriter() { std::fclose(file_); }

void CaptureWriter::Record(Direction direction, std::string_view body) {
  if (failed_) return;
  const auto micros = std::chrono::duration_cast<std::chrono::microseconds>(
                          std::chrono::steady_clock::now() - start_)
                          .count();
  const std::string header =
      EncodeRecordHeader(direction, static_cast<uint64_t>(micros), body.size());
  if (std::fwrite(header.data(), 1, header.size(), file_) != header.size() ||
      std::fwrite(body.data(), 1, body.size(), file_) != body.size() || std::fflush(file_) != 0) {
    failed_ = true;
    spdlog::error("writing the capture file failed ({}); recording stops", std::strerror(errno));
  }
}

Result<Capture> ReadCapture(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::Validation("cannot open the capture file " + path);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return Status::Validation("cannot read the capture file " + path);
  if (bytes.compare(0, kCaptureMagic.size(), kCaptureMagic) != 0) {
    return Status::Validation(path + " is not a Trellis capture file (it does not start with " +
                              std::string(kCaptureMagic) + ")");
  }
  Capture capture;
  size_t pos = kCaptureMagic.size();
  while (pos < bytes.size()) {
    if (bytes.size() - pos < kRecordHeaderBytes) {
      capture.truncated = true;
      break;
    }
    const char* header = bytes.data() + pos;
    const auto direction = static_cast<uint8_t>(header[0]);
    if (direction > static_cast<uint8_t>(Direction::kOut)) {
      return Status::Validation("capture file " + path + ": bad direction byte " +
                                std::to_string(direction) + " at offset " + std::to_string(pos));
    }
    const uint64_t micros = ReadBigEndian(header + 1, 8);
    const uint64_t length = ReadBigEndian(header + 9, 4);
    pos += kRecordHeaderBytes;
    if (bytes.size() - pos < length) {
      capture.truncated = true;
      break;
    }
    capture.records.push_back(
        CaptureRecord{static_cast<Direction>(direction), micros, bytes.substr(pos, length)});
    pos += length;
  }
  return capture;
}

}  // namespace trellis::port
