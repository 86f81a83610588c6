// Value <-> Message: the shapes of spec/protocol.md section 3.
#include "trellis/protocol/message.h"

#include <algorithm>

#include "scan.h"
#include "trellis/protocol/codec.h"
#include "writer.h"

namespace trellis::protocol {
namespace {

const char* TypeName(const Value& v) {
  if (v.is_nil()) return "nil";
  if (v.is_bool()) return "bool";
  if (v.is_int()) return "int";
  if (v.is_float()) return "float";
  if (v.is_string()) return "str";
  if (v.is_binary()) return "bin";
  if (v.is_array()) return "array";
  return "map";
}

// Short enough for an error message whatever the value: an integer shows its
// number, anything else only its type.
std::string Describe(const Value& v) {
  if (v.is_int()) return ToDisplayString(v);
  return TypeName(v);
}

// Builds a Message from a decoded body, moving its parts out, or explains
// which part is wrong. Single use.
class ShapeReader {
 public:
  explicit ShapeReader(Value body) : body_(std::move(body)), call_id_(CallIdOf(body_)) {}

  std::variant<Message, DecodeError> Read() &&;

 private:
  static std::optional<uint64_t> CallIdOf(const Value& body);

  DecodeError Fail(DecodeErrorKind kind, std::string what) const {
    std::string message(DecodeErrorKindName(kind));
    message += ": ";
    message += what;
    return DecodeError{kind, std::move(message), call_id_};
  }
  DecodeError Bad(std::string what) const {
    return Fail(DecodeErrorKind::kBadShape, std::move(what));
  }

  std::variant<Message, DecodeError> ReadRequest(Array& a) const;
  std::variant<Message, DecodeError> ReadReply(Array& a) const;
  std::variant<Message, DecodeError> ReadCancel(Array& a) const;
  std::variant<Message, DecodeError> ReadEvent(Array& a) const;

  Value body_;
  std::optional<uint64_t> call_id_;
};

// The checks below return what is wrong, or nullopt when the part is right.

std::optional<std::string> CheckCallId(const Value& v) {
  const auto id = v.as_uint64();
  if (!id || *id > kMaxCallId) return "call_id must be an integer in 0..2^63-1, got " + Describe(v);
  return std::nullopt;
}

std::optional<std::string> CheckStr(const Value& v, std::string_view what) {
  if (!v.is_string()) return std::string(what) + " must be a str, got " + TypeName(v);
  return std::nullopt;
}

// Keys must be strings and distinct: a repeated key would mean different
// things to a reader keeping the first and one keeping the last.
std::optional<std::string> CheckStringKeyedMap(const Value& v, std::string_view what) {
  if (!v.is_map()) return std::string(what) + " must be a map, got " + TypeName(v);
  std::vector<std::string_view> keys;
  keys.reserve(v.as_map().size());
  for (const auto& [key, item] : v.as_map()) {
    if (!key.is_string()) return std::string(what) + " keys must be str, got " + TypeName(key);
    keys.push_back(key.as_string());
  }
  std::sort(keys.begin(), keys.end());
  if (const auto dup = std::adjacent_find(keys.begin(), keys.end()); dup != keys.end()) {
    return std::string(what) + " repeats the key \"" + std::string(*dup) + "\"";
  }
  return std::nullopt;
}

std::optional<std::string> ReadErrorInfo(const Value& v, ErrorInfo& out) {
  if (auto bad = CheckStringKeyedMap(v, "error")) return bad;
  const Value* code = v.Find("code");
  const Value* message = v.Find("message");
  if (code == nullptr || message == nullptr) return "error needs \"code\" and \"message\"";
  if (auto bad = CheckStr(*code, "error code")) return bad;
  if (auto bad = CheckStr(*message, "error message")) return bad;
  out.code = code->as_string();
  out.message = message->as_string();
  const std::pair<std::string_view, std::optional<std::string>*> optional_fields[] = {
      {"sqlstate", &out.sqlstate}, {"detail", &out.detail}, {"hint", &out.hint}};
  for (const auto& [key, field] : optional_fields) {
    const Value* item = v.Find(key);
    if (item == nullptr) continue;
    if (auto bad = CheckStr(*item, "error " + std::string(key))) return bad;
    *field = item->as_string();
  }
  return std::nullopt;
}

std::optional<uint64_t> ShapeReader::CallIdOf(const Value& body) {
  if (!body.is_array() || body.as_array().size() < 2) return std::nullopt;
  if (CheckCallId(body.as_array()[1])) return std::nullopt;
  return body.as_array()[1].as_uint64();
}

std::variant<Message, DecodeError> ShapeReader::ReadRequest(Array& a) const {
  if (a.size() != 4 && a.size() != 5) {
    return Bad("a request has 4 or 5 elements, got " + std::to_string(a.size()));
  }
  if (auto bad = CheckCallId(a[1])) return Bad(*bad);
  if (auto bad = CheckStr(a[2], "op")) return Bad(*bad);
  if (auto bad = CheckStringKeyedMap(a[3], "args")) return Bad(*bad);
  Request request;
  if (a.size() == 5) {
    const auto timeout = a[4].as_uint64();
    if (!timeout || *timeout == 0) {
      return Bad("timeout_ms must be a positive integer, got " + Describe(a[4]));
    }
    request.timeout_ms = timeout;
  }
  request.call_id = *a[1].as_uint64();
  request.op = std::move(a[2].as_string());
  request.args = std::move(a[3].as_map());
  return request;
}

std::variant<Message, DecodeError> ShapeReader::ReadReply(Array& a) const {
  if (a.size() != 4) return Bad("a reply has 4 elements, got " + std::to_string(a.size()));
  if (auto bad = CheckCallId(a[1])) return Bad(*bad);
  if (auto bad = CheckStr(a[2], "reply status")) return Bad(*bad);
  Reply reply;
  reply.call_id = *a[1].as_uint64();
  const std::string& status = a[2].as_string();
  if (status == "ok") {
    reply.result = std::move(a[3]);
  } else if (status == "error") {
    ErrorInfo error;
    if (auto bad = ReadErrorInfo(a[3], error)) return Bad(*bad);
    reply.result = std::move(error);
  } else {
    // A status is short in any sane message; cap what goes into the error.
    constexpr size_t kShownBytes = 32;
    return Bad("reply status must be \"ok\" or \"error\", got \"" + status.substr(0, kShownBytes) +
               "\"");
  }
  return reply;
}

std::variant<Message, DecodeError> ShapeReader::ReadCancel(Array& a) const {
  if (a.size() != 2) return Bad("a cancel has 2 elements, got " + std::to_string(a.size()));
  if (auto bad = CheckCallId(a[1])) return Bad(*bad);
  return Cancel{*a[1].as_uint64()};
}

std::variant<Message, DecodeError> ShapeReader::ReadEvent(Array& a) const {
  if (a.size() != 3) return Bad("an event has 3 elements, got " + std::to_string(a.size()));
  if (auto bad = CheckStr(a[1], "event kind")) return Bad(*bad);
  if (auto bad = CheckStringKeyedMap(a[2], "event payload")) return Bad(*bad);
  return Event{std::move(a[1].as_string()), std::move(a[2].as_map())};
}

std::variant<Message, DecodeError> ShapeReader::Read() && {
  if (!body_.is_array()) return Bad(std::string("a message is an array, got ") + TypeName(body_));
  Array& a = body_.as_array();
  if (a.empty()) return Bad("a message is a non-empty array, got []");
  if (!a[0].is_int()) {
    return Bad(std::string("the message type must be an integer, got ") + TypeName(a[0]));
  }
  const auto type = a[0].as_int64();
  if (!type || *type < 0 || *type > static_cast<int64_t>(MessageType::kEvent)) {
    return Fail(DecodeErrorKind::kUnknownMessageType,
                "message type " + Describe(a[0]) + " is not one of 0..3");
  }
  switch (static_cast<MessageType>(*type)) {
    case MessageType::kRequest:
      return ReadRequest(a);
    case MessageType::kReply:
      return ReadReply(a);
    case MessageType::kCancel:
      return ReadCancel(a);
    case MessageType::kEvent:
      break;
  }
  return ReadEvent(a);
}

Value ErrorToValue(const ErrorInfo& error) {
  Map map = MakeMap({{"code", error.code}, {"message", error.message}});
  if (error.sqlstate) map.emplace_back("sqlstate", *error.sqlstate);
  if (error.detail) map.emplace_back("detail", *error.detail);
  if (error.hint) map.emplace_back("hint", *error.hint);
  return map;
}

int64_t TypeTag(MessageType type) { return static_cast<int64_t>(type); }

}  // namespace

const std::vector<std::string>& ErrorCodes() {
  static const std::vector<std::string> codes = {
      "validation", "not_found",  "already_exists", "not_migrated", "unsupported",
      "timeout",    "connection", "database",       "protocol",     "internal"};
  return codes;
}

std::variant<Message, DecodeError> DecodeMessage(std::string_view body,
                                                 const DecodeLimits& limits) {
  auto decoded = DecodeValue(body, limits);
  if (auto* error = std::get_if<DecodeError>(&decoded)) {
    error->call_id = internal::PeekCallId(body, limits);
    return std::move(*error);
  }
  return ShapeReader(std::get<Value>(std::move(decoded))).Read();
}

Value MessageToValue(const Message& message) {
  struct Visitor {
    Value operator()(const Request& r) const {
      Array a{TypeTag(MessageType::kRequest), r.call_id, r.op, r.args};
      if (r.timeout_ms) a.emplace_back(*r.timeout_ms);
      return a;
    }
    Value operator()(const Reply& r) const {
      if (r.ok())
        return Array{TypeTag(MessageType::kReply), r.call_id, "ok", std::get<Value>(r.result)};
      return Array{TypeTag(MessageType::kReply), r.call_id, "error",
                   ErrorToValue(std::get<ErrorInfo>(r.result))};
    }
    Value operator()(const Cancel& c) const {
      return Array{TypeTag(MessageType::kCancel), c.call_id};
    }
    Value operator()(const Event& e) const {
      return Array{TypeTag(MessageType::kEvent), e.kind, e.payload};
    }
  };
  return std::visit(Visitor{}, message);
}

std::string EncodeMessage(const Message& message) {
  // Written element by element so a large reply value or args map is not
  // copied into a temporary Value first.
  internal::Writer w;
  struct Visitor {
    internal::Writer& w;
    void operator()(const Request& r) const {
      w.ArrayHeader(r.timeout_ms ? 5 : 4);
      w.Int(TypeTag(MessageType::kRequest));
      w.Uint(r.call_id);
      w.Str(r.op);
      WriteMap(r.args);
      if (r.timeout_ms) w.Uint(*r.timeout_ms);
    }
    void operator()(const Reply& r) const {
      w.ArrayHeader(4);
      w.Int(TypeTag(MessageType::kReply));
      w.Uint(r.call_id);
      if (r.ok()) {
        w.Str("ok");
        w.Write(std::get<Value>(r.result));
      } else {
        w.Str("error");
        w.Write(ErrorToValue(std::get<ErrorInfo>(r.result)));
      }
    }
    void operator()(const Cancel& c) const {
      w.ArrayHeader(2);
      w.Int(TypeTag(MessageType::kCancel));
      w.Uint(c.call_id);
    }
    void operator()(const Event& e) const {
      w.ArrayHeader(3);
      w.Int(TypeTag(MessageType::kEvent));
      w.Str(e.kind);
      WriteMap(e.payload);
    }
    void WriteMap(const Map& map) const {
      w.MapHeader(map.size());
      for (const auto& [key, item] : map) {
        w.Write(key);
        w.Write(item);
      }
    }
  };
  std::visit(Visitor{w}, message);
  return w.Take();
}

}  // namespace trellis::protocol
