#include "pg/node_tree.h"

#include <charconv>

namespace trellis::pg {
namespace {

// Longer tokens are names or strings, which the scanner never needs whole:
// it keeps the first bytes, enough to tell them from what it looks for.
constexpr std::size_t kMaxKeptToken = 64;

bool IsSpace(char c) { return c == ' ' || c == '\n' || c == '\t'; }
bool IsBracket(char c) { return c == '(' || c == ')' || c == '{' || c == '}'; }

bool IsNodeName(std::string_view name) {
  if (name.empty()) return false;
  for (char c : name) {
    if (!((c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_')) return false;
  }
  return true;
}

}  // namespace

void NodeTreeScanner::Feed(std::string_view piece) {
  for (char c : piece) {
    if (failed_) return;
    if (in_token_) {
      if (escaped_) {
        escaped_ = false;
      } else if (IsSpace(c) || IsBracket(c)) {
        in_token_ = false;
        Token(partial_);
        partial_.clear();
        if (IsBracket(c)) Token(std::string_view(&c, 1));
        continue;
      } else if (c == '\\') {
        escaped_ = true;
      }
      if (partial_.size() < kMaxKeptToken) partial_.push_back(c);
      continue;
    }
    if (IsSpace(c)) continue;
    if (IsBracket(c)) {
      Token(std::string_view(&c, 1));
      continue;
    }
    in_token_ = true;
    escaped_ = c == '\\';
    partial_.push_back(c);
  }
}

Result<ExpressionCalls> NodeTreeScanner::Finish() {
  if (in_token_ && !failed_) {
    in_token_ = false;
    Token(partial_);
    partial_.clear();
  }
  if (!failed_ && (node_name_next_ || !stack_.empty())) Fail("it ends inside a node or list");
  if (failed_) return Status::Internal("could not read a query tree from the server: " + failure_);
  return std::move(calls_);
}

void NodeTreeScanner::Fail(std::string why) {
  if (failed_) return;
  failed_ = true;
  failure_ = std::move(why);
}

void NodeTreeScanner::Token(std::string_view token) {
  if (node_name_next_) {
    node_name_next_ = false;
    OpenNode(token);
    return;
  }
  if (token == "{") {
    node_name_next_ = true;
    field_ = Field::kNone;
    return;
  }
  if (token == "}") {
    if (stack_.empty() || stack_.back() == Frame::kList || stack_.back() == Frame::kOperatorList) {
      Fail("a \"}\" closes no node");
      return;
    }
    stack_.pop_back();
    field_ = Field::kNone;
    return;
  }
  if (token == "(") {
    stack_.push_back(field_ == Field::kOpnos ? Frame::kOperatorList : Frame::kList);
    field_ = Field::kNone;
    return;
  }
  if (token == ")") {
    if (stack_.empty() ||
        (stack_.back() != Frame::kList && stack_.back() != Frame::kOperatorList)) {
      Fail("a \")\" closes no list");
      return;
    }
    stack_.pop_back();
    field_ = Field::kNone;
    return;
  }
  if (token.front() == ':') {
    const Frame node = stack_.empty() ? Frame::kList : stack_.back();
    const std::string_view name = token.substr(1);
    field_ = Field::kNone;
    if (node == Frame::kFunction && name == "funcid") field_ = Field::kFuncid;
    if (node == Frame::kOperator && name == "opno") field_ = Field::kOpno;
    if (node == Frame::kOperator && name == "opfuncid") field_ = Field::kOpfuncid;
    if (node == Frame::kRowCompare && name == "opnos") field_ = Field::kOpnos;
    return;
  }
  // A value.
  const Field field = field_;
  field_ = Field::kNone;
  if (!stack_.empty() && stack_.back() == Frame::kOperatorList) {
    if (token != "o") FieldValue(token, calls_.operators);
    return;
  }
  switch (field) {
    case Field::kFuncid:
    case Field::kOpfuncid:
      FieldValue(token, calls_.functions);
      return;
    case Field::kOpno:
      FieldValue(token, calls_.operators);
      return;
    case Field::kOpnos:  // "<>": no operators
    case Field::kNone:
      return;
  }
}

void NodeTreeScanner::OpenNode(std::string_view name) {
  if (!IsNodeName(name)) {
    Fail("\"" + std::string(name) + "\" where a node name belongs");
    return;
  }
  Frame frame = Frame::kOtherNode;
  if (name == "FUNCEXPR") {
    frame = Frame::kFunction;
  } else if (name == "OPEXPR" || name == "DISTINCTEXPR" || name == "NULLIFEXPR" ||
             name == "SCALARARRAYOPEXPR") {
    frame = Frame::kOperator;
  } else if (name == "ROWCOMPAREEXPR") {
    frame = Frame::kRowCompare;
  } else if (name == "SUBLINK") {
    calls_.subquery = true;
  } else if (name == "AGGREF") {
    calls_.aggregate = true;
  } else if (name == "WINDOWFUNC") {
    calls_.window_function = true;
  }
  stack_.push_back(frame);
}

bool NodeTreeScanner::FieldValue(std::string_view token, std::set<uint32_t>& into) {
  uint32_t oid = 0;
  const char* end = token.data() + token.size();
  auto [ptr, ec] = std::from_chars(token.data(), end, oid);
  if (ec != std::errc() || ptr != end) {
    Fail("\"" + std::string(token) + "\" where an OID belongs");
    return false;
  }
  if (oid != 0) into.insert(oid);  // 0: not looked up yet (a planner field)
  return true;
}

}  // namespace trellis::pg
