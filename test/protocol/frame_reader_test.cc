// FrameReader and EncodeFrame (spec/protocol.md section 1).
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "trellis/protocol/frame.h"

namespace trellis::protocol {
namespace {

using namespace std::string_literals;

std::string Bytes(std::initializer_list<int> bytes) {
  std::string out;
  for (const int b : bytes) out.push_back(static_cast<char>(b));
  return out;
}

std::vector<std::string> Drain(FrameReader& reader) {
  std::vector<std::string> frames;
  while (auto body = reader.Next()) frames.push_back(std::move(*body));
  return frames;
}

TEST_CASE("EncodeFrame prefixes a big-endian length", "[frame]") {
  CHECK(EncodeFrame("") == Bytes({0, 0, 0, 0}));
  CHECK(EncodeFrame("\xc0") == Bytes({0, 0, 0, 1, 0xc0}));
  const std::string body(0x010203, 'x');
  const std::string frame = EncodeFrame(body);
  CHECK(frame.substr(0, 4) == Bytes({0x00, 0x01, 0x02, 0x03}));
  CHECK(frame.size() == 4 + body.size());
}

TEST_CASE("truncated header needs more bytes", "[frame]") {
  FrameReader reader;
  CHECK(reader.Feed(Bytes({0, 0, 0})));
  CHECK_FALSE(reader.Next().has_value());
  CHECK(reader.buffered() == 3);
  CHECK(reader.Feed(Bytes({2, 'h'})));
  CHECK_FALSE(reader.Next().has_value());
  CHECK(reader.Feed("i"));
  CHECK(reader.Next() == std::optional<std::string>("hi"));
  CHECK(reader.buffered() == 0);
}

TEST_CASE("a stream of frames split at every byte boundary reads the same", "[frame]") {
  const std::vector<std::string> bodies = {"first", "", std::string(300, 'z'), "\x00\x01\x02"s,
                                           "last"};
  std::string stream;
  for (const auto& body : bodies) stream += EncodeFrame(body);

  for (size_t a = 0; a <= stream.size(); a += 7) {
    for (size_t b = a; b <= stream.size(); ++b) {
      FrameReader reader;
      std::vector<std::string> got;
      for (const auto chunk :
           {std::string_view(stream).substr(0, a), std::string_view(stream).substr(a, b - a),
            std::string_view(stream).substr(b)}) {
        REQUIRE(reader.Feed(chunk));
        for (auto& f : Drain(reader)) got.push_back(std::move(f));
      }
      INFO("split at " << a << " and " << b);
      REQUIRE(got == bodies);
      REQUIRE(reader.buffered() == 0);
    }
  }
}

TEST_CASE("frames fed one byte at a time come out whole", "[frame]") {
  const std::string stream = EncodeFrame("abc") + EncodeFrame("") + EncodeFrame("de");
  FrameReader reader;
  std::vector<std::string> got;
  for (const char c : stream) {
    REQUIRE(reader.Feed(std::string_view(&c, 1)));
    for (auto& f : Drain(reader)) got.push_back(std::move(f));
  }
  CHECK(got == std::vector<std::string>{"abc", "", "de"});
}

TEST_CASE("a zero-length frame is an empty body", "[frame]") {
  FrameReader reader;
  CHECK(reader.Feed(Bytes({0, 0, 0, 0})));
  CHECK(reader.Next() == std::optional<std::string>(""));
  CHECK_FALSE(reader.Next().has_value());
}

TEST_CASE("a length over the maximum loses framing before buffering the body", "[frame]") {
  FrameReader reader;
  const std::string stream = EncodeFrame("ok") + Bytes({0x01, 0x00, 0x00, 0x01}) + "junk";
  CHECK_FALSE(reader.Feed(stream));
  CHECK(reader.framing_lost());
  CHECK(reader.bad_length() == kMaxFrameBytes + 1);
  // The frame before the bad prefix is still delivered; nothing after it is kept.
  CHECK(reader.buffered() == 6);
  CHECK(reader.Next() == std::optional<std::string>("ok"));
  CHECK_FALSE(reader.Next().has_value());
  CHECK(reader.buffered() == 0);
  CHECK_FALSE(reader.Feed(EncodeFrame("later")));
  CHECK_FALSE(reader.Next().has_value());
}

TEST_CASE("the largest length 2^32-1 loses framing at once", "[frame]") {
  FrameReader reader;
  CHECK_FALSE(reader.Feed(Bytes({0xff, 0xff, 0xff, 0xff})));
  CHECK(reader.bad_length() == 0xffffffffu);
  CHECK(reader.buffered() == 0);
}

TEST_CASE("a frame of exactly the maximum size is accepted", "[frame]") {
  FrameReader reader;
  const std::string body(kMaxFrameBytes, 'm');
  const std::string frame = EncodeFrame(body);
  CHECK(reader.Feed(std::string_view(frame).substr(0, frame.size() - 1)));
  CHECK_FALSE(reader.Next().has_value());
  CHECK(reader.buffered() == frame.size() - 1);
  CHECK(reader.Feed(std::string_view(frame).substr(frame.size() - 1)));
  const auto got = reader.Next();
  REQUIRE(got.has_value());
  CHECK(got->size() == kMaxFrameBytes);
  CHECK(*got == body);
}

TEST_CASE("a smaller maximum is honoured", "[frame]") {
  FrameReader reader(8);
  CHECK(reader.Feed(EncodeFrame("12345678")));
  CHECK(reader.Next() == std::optional<std::string>("12345678"));
  CHECK_FALSE(reader.Feed(EncodeFrame("123456789")));
  CHECK(reader.bad_length() == 9);
}

TEST_CASE("many small frames across compaction keep their order", "[frame]") {
  // Enough bytes that taken frames are compacted away several times.
  FrameReader reader;
  std::string stream;
  for (int i = 0; i < 50'000; ++i) stream += EncodeFrame(std::to_string(i));
  int next = 0;
  for (size_t pos = 0; pos < stream.size(); pos += 4093) {
    REQUIRE(reader.Feed(std::string_view(stream).substr(pos, 4093)));
    while (auto body = reader.Next()) REQUIRE(*body == std::to_string(next++));
  }
  CHECK(next == 50'000);
  CHECK(reader.buffered() == 0);
}

}  // namespace
}  // namespace trellis::protocol
