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

// Builds a Message from a decoded body, or explains which part is wrong.
class ShapeReader {
 public:
  explicit ShapeReader(const Value& body) : body_(body) {}

  std::variant<Message, DecodeError> Read();

 private:
  DecodeError Bad(std::string what) const {
    return Error(DecodeErrorKind::kBadShape, std::move(what));
  }
  DecodeError Error(DecodeErrorKind kind, std::string what) const {
    std::string message(DecodeErrorKindName(kind));
    message += ": ";
    message += what;
    return DecodeError{kind, std::move(message), CallIdOf(body_)};
  }
  static std::optional<uint64_t> CallIdOf(const Value& body);

  // Each returns an error message, or nullopt and fills `out`.
  std::optional<std::string> CallId(const Value& v, uint64_t& out) const;
  std::optional<std::string> Str(const Value& v, const char* what, std::string& out) const;
  std::optional<std::string> StringKeyedMap(const Value& v, const char* what, Map& out) const;
  std::optional<std::string> Error(const Value& v, ErrorInfo& out) const;

  std::variant<Message, DecodeError> ReadRequest(const Array& a) const;
  std::variant<Message, DecodeError> ReadReply(const Array& a) const;
  std::variant<Message, DecodeError> ReadCancel(const Array& a) const;
  std::variant<Message, DecodeError> ReadEvent(const Array& a) const;

  const Value& body_;
};

std::optional<uint64_t> ShapeReader::CallIdOf(const Value& body) {
  if (!body.is_array() || body.as_array().size() < 2) return std::nullopt;
  const auto id = body.as_array()[1].as_uint64();
  if (!id || *id > kMaxCallId) return std::nullopt;
  return id;
}

std::optional<std::string> ShapeReader::CallId(const Value& v, uint64_t& out) const {
  const auto id = v.as_uint64();
  if (!id || *id > kMaxCallId) {
    return std::string("call_id must be an integer in 0..2^63-1, got ") + ToDisplayString(v);
  }
  out = *id;
  return std::nullopt;
}

std::optional<std::string> ShapeReader::Str(const Value& v, const char* what,
                                            std::string& out) const {
  if (!v.is_string()) return std::string(what) + " must be a str, got " + TypeName(v);
  out = v.as_string();
  return std::nullopt;
}

// Keys must be strings and distinct: a repeated key would mean different
// things to a reader taking the first and one taking the last.
std::optional<std::string> ShapeReader::StringKeyedMap(const Value& v, const char* what,
                                                       Map& out) const {
  if (!v.is_map()) return std::string(what) + " must be a map, got " + TypeName(v);
  const Map& map = v.as_map();
  std::vector<std::string_view> keys;
  keys.reserve(map.size());
  for (const auto& [key, item] : map) {
    if (!key.is_string()) {
      return std::string(what) + " keys must be str, got " + TypeName(key);
    }
    keys.push_back(key.as_string());
  }
  std::sort(keys.begin(), keys.end());
  if (const auto dup = std::adjacent_find(keys.begin(), keys.end()); dup != keys.end()) {
    return std::string(what) + " repeats the key \"" + std::string(*dup) + "\"";
  }
  out = map;
  return std::nullopt;
}

std::optional<std::string> ShapeReader::Error(const Value& v, ErrorInfo& out) const {
  Map map;
  if (auto bad = StringKeyedMap(v, "error", map)) return bad;
  const Value* code = v.Find("code");
  const Value* message = v.Find("message");
  if (code == nullptr || message == nullptr) {
    return std::string("error needs \"code\" and \"message\"");
  }
  if (auto bad = Str(*code, "error code", out.code)) return bad;
  if (auto bad = Str(*message, "error message", out.message)) return bad;
  const std::pair<const char*, std::optional<std::string>*> optional_fields[] = {
      {"sqlstate", &out.sqlstate}, {"detail", &out.detail}, {"hint", &out.hint}};
  for (const auto& [key, field] : optional_fields) {
    const Value* item = v.Find(key);
    if (item == nullptr) continue;
    std::string text;
    if (auto bad = Str(*item, (std::string("error ") + key).c_str(), text)) return bad;
    *field = std::move(text);
  }
  return std::nullopt;
}

std::variant<Message, DecodeError> ShapeReader::ReadRequest(const Array& a) const {
  if (a.size() != 4 && a.size() != 5) {
    return Bad("a request has 4 or 5 elements, got " + std::to_string(a.size()));
  }
  Request request;
  if (auto bad = CallId(a[1], request.call_id)) return Bad(*bad);
  if (auto bad = Str(a[2], "op", request.op)) return Bad(*bad);
  if (auto bad = StringKeyedMap(a[3], "args", request.args)) return Bad(*bad);
  if (a.size() == 5) {
    const auto timeout = a[4].as_uint64();
    if (!timeout || *timeout == 0) {
      return Bad("timeout_ms must be a positive integer, got " + ToDisplayString(a[4]));
    }
    request.timeout_ms = timeout;
  }
  return request;
}

std::variant<Message, DecodeError> ShapeReader::ReadReply(const Array& a) const {
  if (a.size() != 4) return Bad("a reply has 4 elements, got " + std::to_string(a.size()));
  Reply reply;
  if (auto bad = CallId(a[1], reply.call_id)) return Bad(*bad);
  std::string status;
  if (auto bad = Str(a[2], "reply status", status)) return Bad(*bad);
  if (status == "ok") {
    reply.result = a[3];
  } else if (status == "error") {
    ErrorInfo error;
    if (auto bad = Error(a[3], error)) return Bad(*bad);
    reply.result = std::move(error);
  } else {
    return Bad("reply status must be \"ok\" or \"error\", got \"" + status + "\"");
  }
  return reply;
}

std::variant<Message, DecodeError> ShapeReader::ReadCancel(const Array& a) const {
  if (a.size() != 2) return Bad("a cancel has 2 elements, got " + std::to_string(a.size()));
  Cancel cancel;
  if (auto bad = CallId(a[1], cancel.call_id)) return Bad(*bad);
  return cancel;
}

std::variant<Message, DecodeError> ShapeReader::ReadEvent(const Array& a) const {
  if (a.size() != 3) return Bad("an event has 3 elements, got " + std::to_string(a.size()));
  Event event;
  if (auto bad = Str(a[1], "event kind", event.kind)) return Bad(*bad);
  if (auto bad = StringKeyedMap(a[2], "event payload", event.payload)) return Bad(*bad);
  return event;
}

std::variant<Message, DecodeError> ShapeReader::Read() {
  if (!body_.is_array()) return Bad(std::string("a message is an array, got ") + TypeName(body_));
  const Array& a = body_.as_array();
  if (a.empty()) return Bad("a message is a non-empty array, got []");
  if (!a[0].is_int()) {
    return Bad(std::string("the message type must be an integer, got ") + TypeName(a[0]));
  }
  const auto type = a[0].as_int64();
  if (!type || *type < 0 || *type > static_cast<int64_t>(MessageType::kEvent)) {
    return Error(DecodeErrorKind::kUnknownMessageType,
                 "message type " + ToDisplayString(a[0]) + " is not one of 0..3");
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
  return ShapeReader(std::get<Value>(decoded)).Read();
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
