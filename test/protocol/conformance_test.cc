// Runs every case of every spec/conformance/*.json file against the C++
// codec. Adding a vector needs no change here.
#include <set>
#include <variant>

#include <catch2/catch.hpp>

#include "trellis/protocol/codec.h"
#include "trellis/protocol/frame.h"
#include "vectors.h"

namespace trellis::protocol {
namespace {

using testing::BytesToHex;
using testing::Json;
using testing::VectorCase;

const std::vector<VectorCase>& Vectors() {
  static const std::vector<VectorCase> cases = testing::LoadVectors(TRELLIS_CONFORMANCE_DIR);
  return cases;
}

std::string KindOf(const DecodeError& e) { return std::string(DecodeErrorKindName(e.kind)); }

void CheckValueCase(const VectorCase& c) {
  const auto decoded = DecodeValue(c.bytes);
  if (const Json* error = c.json.Find("error")) {
    if (const auto* v = std::get_if<Value>(&decoded)) {
      FAIL_CHECK("decoded to " << ToDisplayString(*v) << ", expected " << error->as_string());
      return;
    }
    CHECK(KindOf(std::get<DecodeError>(decoded)) == error->as_string());
    return;
  }
  if (const auto* e = std::get_if<DecodeError>(&decoded)) {
    FAIL_CHECK("decode failed: " << e->message);
    return;
  }
  const Value expected = testing::TypedToValue(c.json.At("value"));
  const Value& got = std::get<Value>(decoded);
  INFO("decoded " << ToDisplayString(got));
  CHECK(testing::SameValue(got, expected));
  if (const Json* canonical = c.json.Find("canonical"); canonical && canonical->as_bool()) {
    CHECK(BytesToHex(EncodeValue(expected)) == BytesToHex(c.bytes));
  }
  // Whatever width it arrived in, the value survives a canonical round trip.
  const auto again = DecodeValue(EncodeValue(got));
  CHECK((std::holds_alternative<Value>(again) &&
         testing::SameValue(std::get<Value>(again), expected)));
}

void CheckMessageCase(const VectorCase& c) {
  const auto decoded = DecodeMessage(c.bytes);
  if (const Json* error = c.json.Find("error")) {
    if (std::holds_alternative<Message>(decoded)) {
      FAIL_CHECK("decoded, expected " << error->as_string());
      return;
    }
    const auto& e = std::get<DecodeError>(decoded);
    INFO("message: " << e.message);
    CHECK(KindOf(e) == error->as_string());
    // An absent "call_id" means the error must carry none.
    std::optional<std::string> expected_id;
    if (const Json* id = c.json.Find("call_id")) expected_id = id->as_string();
    std::optional<std::string> got_id;
    if (e.call_id) got_id = std::to_string(*e.call_id);
    CHECK(got_id == expected_id);
    return;
  }
  if (const auto* e = std::get_if<DecodeError>(&decoded)) {
    FAIL_CHECK("decode failed: " << e->message);
    return;
  }
  const Message expected = testing::MessageFromJson(c.json.At("message"));
  CHECK(testing::SameMessage(std::get<Message>(decoded), expected));
  const auto again = DecodeMessage(EncodeMessage(expected));
  CHECK((std::holds_alternative<Message>(again) &&
         testing::SameMessage(std::get<Message>(again), expected)));
}

struct FrameOutcome {
  std::vector<std::string> frames;  // as hex
  bool lost = false;
  size_t rest = 0;
};

FrameOutcome ReadFrames(const std::vector<std::string_view>& chunks) {
  FrameOutcome out;
  FrameReader reader;
  for (const auto chunk : chunks) {
    const bool fed = reader.Feed(chunk);
    CHECK(fed == !reader.framing_lost());
    while (auto body = reader.Next()) out.frames.push_back(BytesToHex(*body));
  }
  out.lost = reader.framing_lost();
  out.rest = reader.buffered();
  return out;
}

void CheckFrameOutcome(const VectorCase& c, const FrameOutcome& got) {
  std::vector<std::string> expected_frames;
  if (const Json* frames = c.json.Find("frames")) {
    for (const Json& f : frames->as_array()) expected_frames.push_back(f.as_string());
  }
  CHECK(got.frames == expected_frames);
  if (const Json* error = c.json.Find("error")) {
    CHECK(error->as_string() == "oversize_frame");
    CHECK(got.lost);
    return;
  }
  CHECK_FALSE(got.lost);
  const Json* rest = c.json.Find("rest");
  CHECK(got.rest == (rest ? static_cast<size_t>(rest->as_double()) : 0u));
}

void CheckFrameCase(const VectorCase& c) {
  const std::string_view stream = c.bytes;
  {
    INFO("fed in one chunk");
    CheckFrameOutcome(c, ReadFrames({stream}));
  }
  for (size_t split = 0; split <= stream.size(); ++split) {
    INFO("fed in two chunks split at byte " << split);
    CheckFrameOutcome(c, ReadFrames({stream.substr(0, split), stream.substr(split)}));
  }
  std::vector<std::string_view> bytes;
  for (size_t i = 0; i < stream.size(); ++i) bytes.push_back(stream.substr(i, 1));
  INFO("fed byte by byte");
  CheckFrameOutcome(c, ReadFrames(bytes));
}

TEST_CASE("conformance vectors load, with unique names and known kinds", "[conformance]") {
  const auto& cases = Vectors();
  CHECK(cases.size() >= 70);
  std::set<std::string> names;
  for (const auto& c : cases) {
    INFO(c.file << ": " << c.name);
    CHECK(names.insert(c.name).second);
    CHECK((c.kind == "value" || c.kind == "message" || c.kind == "frame"));
  }
}

TEST_CASE("every conformance vector holds for the C++ codec", "[conformance]") {
  for (const auto& c : Vectors()) {
    INFO(c.file << ": \"" << c.name << "\" hex " << BytesToHex(c.bytes));
    if (c.kind == "value") {
      CheckValueCase(c);
    } else if (c.kind == "message") {
      CheckMessageCase(c);
    } else {
      CheckFrameCase(c);
    }
  }
}

}  // namespace
}  // namespace trellis::protocol
