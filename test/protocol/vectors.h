// Loads spec/conformance/*.json (format in spec/conformance/README.md) and
// turns its typed JSON into protocol Values and Messages, for the conformance
// runner and the fuzz seed tool.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "json.h"
#include "trellis/protocol/message.h"
#include "trellis/protocol/value.h"

namespace trellis::testing {

struct VectorCase {
  std::string file;   // file name, without the directory
  std::string name;   // unique across all files
  std::string kind;   // "value" | "message" | "frame"
  std::string bytes;  // "hex", decoded
  Json json;          // the whole case
};

// Every case of every *.json file in `dir`, files in name order. Throws
// JsonError on a malformed file or case.
std::vector<VectorCase> LoadVectors(const std::string& dir);

// Throws JsonError on odd length or a non-hex digit.
std::string HexToBytes(std::string_view hex);
std::string BytesToHex(std::string_view bytes);

// TYPED JSON ({"int": "-5"}, {"map": [[k, v], ...]}, ...) -> Value.
protocol::Value TypedToValue(const Json& typed);
// MSG JSON ({"request": {...}}, ...) -> Message.
protocol::Message MessageFromJson(const Json& msg);

// Structural equality that, unlike Value's operator==, treats two NaNs as
// equal and tells 0.0 from -0.0.
bool SameValue(const protocol::Value& a, const protocol::Value& b);
bool SameMessage(const protocol::Message& a, const protocol::Message& b);

}  // namespace trellis::testing
