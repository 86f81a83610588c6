// Recursive-descent JSON parser (RFC 8259) for test data.
#include "json.h"

#include <cstdlib>

namespace trellis::testing {

class JsonParser {
 public:
  explicit JsonParser(std::string_view text) : text_(text) {}

  Json ParseDocument() {
    Json value = ParseValue();
    SkipSpace();
    if (pos_ != text_.size()) Fail("text after the JSON value");
    return value;
  }

 private:
  [[noreturn]] void Fail(const std::string& what) const {
    throw JsonError("JSON: " + what + " at byte " + std::to_string(pos_));
  }

  void SkipSpace() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\n' ||
                                   text_[pos_] == '\r' || text_[pos_] == '\t')) {
      ++pos_;
    }
  }

  char Peek() {
    SkipSpace();
    if (pos_ >= text_.size()) Fail("unexpected end");
    return text_[pos_];
  }

  void Expect(char c) {
    if (Peek() != c) Fail(std::string("expected '") + c + "'");
    ++pos_;
  }

  bool TryLiteral(std::string_view word) {
    if (text_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }

  Json ParseValue() {
    Json value;
    const char c = Peek();
    if (c == '{') {
      value.type_ = Json::Type::kObject;
      ++pos_;
      if (Peek() == '}') {
        ++pos_;
        return value;
      }
      while (true) {
        if (Peek() != '"') Fail("expected a member name");
        std::string key = ParseString();
        Expect(':');
        value.members_.emplace_back(std::move(key), ParseValue());
        if (Peek() == ',') {
          ++pos_;
          continue;
        }
        Expect('}');
        return value;
      }
    }
    if (c == '[') {
      value.type_ = Json::Type::kArray;
      ++pos_;
      if (Peek() == ']') {
        ++pos_;
        return value;
      }
      while (true) {
        value.items_.push_back(ParseValue());
        if (Peek() == ',') {
          ++pos_;
          continue;
        }
        Expect(']');
        return value;
      }
    }
    if (c == '"') {
      value.type_ = Json::Type::kString;
      value.text_ = ParseString();
      return value;
    }
    if (TryLiteral("null")) return value;
    if (TryLiteral("true") || TryLiteral("false")) {
      value.type_ = Json::Type::kBool;
      value.bool_ = text_.substr(pos_ - 4, 4) == "true";
      return value;
    }
    if (c == '-' || (c >= '0' && c <= '9')) {
      const size_t start = pos_;
      while (pos_ < text_.size() &&
             std::string_view("+-0123456789.eE").find(text_[pos_]) != std::string_view::npos) {
        ++pos_;
      }
      value.type_ = Json::Type::kNumber;
      value.text_ = std::string(text_.substr(start, pos_ - start));
      return value;
    }
    Fail("unexpected character");
  }

  unsigned ParseHex4() {
    if (pos_ + 4 > text_.size()) Fail("short \\u escape");
    unsigned v = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = text_[pos_++];
      v <<= 4;
      if (c >= '0' && c <= '9') {
        v |= c - '0';
      } else if (c >= 'a' && c <= 'f') {
        v |= c - 'a' + 10;
      } else if (c >= 'A' && c <= 'F') {
        v |= c - 'A' + 10;
      } else {
        Fail("bad \\u escape");
      }
    }
    return v;
  }

  static void AppendUtf8(unsigned cp, std::string& out) {
    if (cp < 0x80) {
      out.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      out.push_back(static_cast<char>(0xc0 | (cp >> 6)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
    } else if (cp < 0x10000) {
      out.push_back(static_cast<char>(0xe0 | (cp >> 12)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
    } else {
      out.push_back(static_cast<char>(0xf0 | (cp >> 18)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3f)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
    }
  }

  // REQUIRES: text_[pos_] == '"'.
  std::string ParseString() {
    ++pos_;
    std::string out;
    while (true) {
      if (pos_ >= text_.size()) Fail("unterminated string");
      const char c = text_[pos_++];
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) Fail("control character in string");
      if (c != '\\') {
        out.push_back(c);
        continue;
      }
      if (pos_ >= text_.size()) Fail("unterminated escape");
      const char e = text_[pos_++];
      switch (e) {
        case '"':
        case '\\':
        case '/':
          out.push_back(e);
          break;
        case 'b':
          out.push_back('\b');
          break;
        case 'f':
          out.push_back('\f');
          break;
        case 'n':
          out.push_back('\n');
          break;
        case 'r':
          out.push_back('\r');
          break;
        case 't':
          out.push_back('\t');
          break;
        case 'u': {
          unsigned cp = ParseHex4();
          if (cp >= 0xd800 && cp <= 0xdbff) {
            if (!TryLiteral("\\u")) Fail("lone high surrogate");
            const unsigned low = ParseHex4();
            if (low < 0xdc00 || low > 0xdfff) Fail("bad low surrogate");
            cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
          } else if (cp >= 0xdc00 && cp <= 0xdfff) {
            Fail("lone low surrogate");
          }
          AppendUtf8(cp, out);
          break;
        }
        default:
          Fail("unknown escape");
      }
    }
  }

  std::string_view text_;
  size_t pos_ = 0;
};

Json Json::Parse(std::string_view text) { return JsonParser(text).ParseDocument(); }

bool Json::as_bool() const {
  if (type_ != Type::kBool) throw JsonError("JSON: not a bool");
  return bool_;
}

double Json::as_double() const {
  if (type_ != Type::kNumber) throw JsonError("JSON: not a number");
  return std::strtod(text_.c_str(), nullptr);
}

const std::string& Json::as_string() const {
  if (type_ != Type::kString) throw JsonError("JSON: not a string");
  return text_;
}

const std::vector<Json>& Json::as_array() const {
  if (type_ != Type::kArray) throw JsonError("JSON: not an array");
  return items_;
}

const std::vector<std::pair<std::string, Json>>& Json::as_object() const {
  if (type_ != Type::kObject) throw JsonError("JSON: not an object");
  return members_;
}

const Json* Json::Find(std::string_view key) const {
  for (const auto& [name, value] : members_) {
    if (name == key) return &value;
  }
  return nullptr;
}

const Json& Json::At(std::string_view key) const {
  const Json* value = Find(key);
  if (value == nullptr) throw JsonError("JSON: missing member \"" + std::string(key) + "\"");
  return *value;
}

}  // namespace trellis::testing
