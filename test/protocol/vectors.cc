// Conformance vector loading and typed-JSON conversion.
#include "vectors.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>

namespace trellis::testing {
namespace {

using protocol::Value;

uint64_t ParseUnsigned(std::string_view text) {
  uint64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size()) {
    throw JsonError("vectors: bad unsigned decimal \"" + std::string(text) + "\"");
  }
  return v;
}

Value ParseInt(const std::string& text) {
  if (!text.empty() && text[0] == '-') {
    int64_t v = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || end != text.data() + text.size()) {
      throw JsonError("vectors: bad int \"" + text + "\"");
    }
    return Value(v);
  }
  return Value(ParseUnsigned(text));
}

double ParseFloat(const Json& json) {
  if (json.is_number()) return json.as_double();
  const std::string& text = json.as_string();
  if (text == "nan") return std::numeric_limits<double>::quiet_NaN();
  if (text == "inf") return std::numeric_limits<double>::infinity();
  if (text == "-inf") return -std::numeric_limits<double>::infinity();
  throw JsonError("vectors: bad float \"" + text + "\"");
}

protocol::Map TypedToMap(const Json& typed) {
  Value value = TypedToValue(typed);
  if (!value.is_map()) throw JsonError("vectors: expected a typed map");
  return value.as_map();
}

std::optional<std::string> OptionalString(const Json& object, std::string_view key) {
  const Json* member = object.Find(key);
  if (member == nullptr) return std::nullopt;
  return member->as_string();
}

bool SameDouble(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return a == b && std::signbit(a) == std::signbit(b);
}

}  // namespace

std::vector<VectorCase> LoadVectors(const std::string& dir) {
  std::vector<std::filesystem::path> paths;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() == ".json") paths.push_back(entry.path());
  }
  std::sort(paths.begin(), paths.end());
  std::vector<VectorCase> cases;
  for (const auto& path : paths) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    const Json document = Json::Parse(text.str());
    for (const Json& c : document.At("cases").as_array()) {
      VectorCase vc;
      vc.file = path.filename().string();
      vc.name = c.At("name").as_string();
      vc.kind = c.At("kind").as_string();
      vc.bytes = HexToBytes(c.At("hex").as_string());
      vc.json = c;
      cases.push_back(std::move(vc));
    }
  }
  return cases;
}

std::string HexToBytes(std::string_view hex) {
  if (hex.size() % 2 != 0) throw JsonError("vectors: odd-length hex");
  auto digit = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    throw JsonError(std::string("vectors: bad hex digit '") + c + "' (lowercase only)");
  };
  std::string bytes;
  bytes.reserve(hex.size() / 2);
  for (size_t i = 0; i < hex.size(); i += 2) {
    bytes.push_back(static_cast<char>(digit(hex[i]) * 16 + digit(hex[i + 1])));
  }
  return bytes;
}

std::string BytesToHex(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(bytes.size() * 2);
  for (const char c : bytes) {
    const auto u = static_cast<unsigned char>(c);
    hex.push_back(kDigits[u >> 4]);
    hex.push_back(kDigits[u & 0xf]);
  }
  return hex;
}

Value TypedToValue(const Json& typed) {
  const auto& members = typed.as_object();
  if (members.size() != 1) throw JsonError("vectors: a typed value has exactly one member");
  const auto& [tag, body] = members.front();
  if (tag == "nil") return Value();
  if (tag == "bool") return Value(body.as_bool());
  if (tag == "int") return ParseInt(body.as_string());
  if (tag == "float") return Value(ParseFloat(body));
  if (tag == "str") return Value(body.as_string());
  if (tag == "bin") return Value(protocol::Binary{HexToBytes(body.as_string())});
  if (tag == "array") {
    protocol::Array array;
    for (const Json& item : body.as_array()) array.push_back(TypedToValue(item));
    return Value(std::move(array));
  }
  if (tag == "map") {
    protocol::Map map;
    for (const Json& pair : body.as_array()) {
      const auto& kv = pair.as_array();
      if (kv.size() != 2) throw JsonError("vectors: a map pair has 2 elements");
      map.emplace_back(TypedToValue(kv[0]), TypedToValue(kv[1]));
    }
    return Value(std::move(map));
  }
  throw JsonError("vectors: unknown typed tag \"" + tag + "\"");
}

protocol::Message MessageFromJson(const Json& msg) {
  const auto& members = msg.as_object();
  if (members.size() != 1) throw JsonError("vectors: a message has exactly one member");
  const auto& [type, body] = members.front();
  if (type == "request") {
    protocol::Request request;
    request.call_id = ParseUnsigned(body.At("call_id").as_string());
    request.op = body.At("op").as_string();
    request.args = TypedToMap(body.At("args"));
    if (const Json* timeout = body.Find("timeout_ms")) {
      request.timeout_ms = ParseUnsigned(timeout->as_string());
    }
    return request;
  }
  if (type == "reply") {
    protocol::Reply reply;
    reply.call_id = ParseUnsigned(body.At("call_id").as_string());
    if (const Json* ok = body.Find("ok")) {
      reply.result = TypedToValue(*ok);
    } else {
      const Json& error = body.At("error");
      protocol::ErrorInfo info;
      info.code = error.At("code").as_string();
      info.message = error.At("message").as_string();
      info.sqlstate = OptionalString(error, "sqlstate");
      info.detail = OptionalString(error, "detail");
      info.hint = OptionalString(error, "hint");
      reply.result = std::move(info);
    }
    return reply;
  }
  if (type == "cancel") {
    return protocol::Cancel{ParseUnsigned(body.At("call_id").as_string())};
  }
  if (type == "event") {
    return protocol::Event{body.At("kind").as_string(), TypedToMap(body.At("payload"))};
  }
  throw JsonError("vectors: unknown message type \"" + type + "\"");
}

bool SameValue(const Value& a, const Value& b) {
  if (a.storage().index() != b.storage().index()) return false;
  if (a.is_float()) return SameDouble(a.as_double(), b.as_double());
  if (a.is_array()) {
    const auto& x = a.as_array();
    const auto& y = b.as_array();
    return std::equal(x.begin(), x.end(), y.begin(), y.end(), SameValue);
  }
  if (a.is_map()) {
    const auto& x = a.as_map();
    const auto& y = b.as_map();
    return std::equal(x.begin(), x.end(), y.begin(), y.end(), [](const auto& p, const auto& q) {
      return SameValue(p.first, q.first) && SameValue(p.second, q.second);
    });
  }
  return a == b;
}

bool SameMessage(const protocol::Message& a, const protocol::Message& b) {
  if (a.index() != b.index()) return false;
  if (const auto* x = std::get_if<protocol::Reply>(&a)) {
    const auto& y = std::get<protocol::Reply>(b);
    if (x->call_id != y.call_id || x->ok() != y.ok()) return false;
    if (x->ok()) return SameValue(std::get<Value>(x->result), std::get<Value>(y.result));
    return x->result == y.result;
  }
  if (const auto* x = std::get_if<protocol::Request>(&a)) {
    const auto& y = std::get<protocol::Request>(b);
    return x->call_id == y.call_id && x->op == y.op && x->timeout_ms == y.timeout_ms &&
           SameValue(Value(x->args), Value(y.args));
  }
  if (const auto* x = std::get_if<protocol::Event>(&a)) {
    const auto& y = std::get<protocol::Event>(b);
    return x->kind == y.kind && SameValue(Value(x->payload), Value(y.payload));
  }
  return a == b;
}

}  // namespace trellis::testing
