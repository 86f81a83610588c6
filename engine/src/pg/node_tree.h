// Reads PostgreSQL's node-tree text (the pg_node_tree type: a view's stored
// query in pg_rewrite.ev_action, column defaults, index expressions): the
// format the server writes with outfuncs.c and reads back with read.c. The
// scanner takes the text in pieces of any size and keeps only a stack of the
// nodes it is inside, so a tree of any size passes through it in small,
// fixed memory: a 1 MB IN list becomes ~37 MB of tree text, which must never
// sit in the port whole (spec/engine.md, "What an expression may call").
//
// Tokens follow read.c's pg_strtok: whitespace separates them; ( ) { } are
// tokens of their own; a backslash makes the next byte ordinary (names and
// strings are escaped so); "<>" is an empty token. A node is
// `{NAME :field value :field value ...}`, a list `(...)`, and an integer
// or OID list `(i 1 2)` / `(o 1 2)`. Constants are `N [ byte byte ... ]`, so
// the text of a string literal never appears as text.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "trellis/status.h"

namespace trellis::pg {

// What an expression tree calls, by catalog OID, and which kinds of node it
// holds that a row-by-row recompute cannot keep.
struct ExpressionCalls {
  std::set<uint32_t> functions;  // FUNCEXPR funcid; the opfuncid of operator nodes
  std::set<uint32_t> operators;  // opno of OPEXPR, DISTINCTEXPR, NULLIFEXPR,
                                 // SCALARARRAYOPEXPR; ROWCOMPAREEXPR opnos
  bool subquery = false;         // a SUBLINK node
  bool aggregate = false;        // an AGGREF node
  bool window_function = false;  // a WINDOWFUNC node
};

// Collects ExpressionCalls from node-tree text fed in pieces. Not
// thread-safe; one per tree.
class NodeTreeScanner {
 public:
  // Reads the next piece of the text. Pieces may split tokens anywhere.
  void Feed(std::string_view piece);

  // Ends the text: the calls found, or kInternal when the text was not one
  // well-formed tree (unbalanced brackets, a field value that is not an
  // OID, a token where a node name belongs), so a tree the scanner cannot
  // read is never taken to call nothing.
  Result<ExpressionCalls> Finish();

 private:
  // What an open bracket on the stack is.
  enum class Frame : uint8_t {
    kFunction,      // FUNCEXPR
    kOperator,      // OPEXPR and the nodes built like it
    kRowCompare,    // ROWCOMPAREEXPR
    kOtherNode,     // any other node
    kList,          // (...)
    kOperatorList,  // the (o ...) list of a ROWCOMPAREEXPR's opnos
  };
  // The field whose value comes next, among those the scanner collects.
  enum class Field : uint8_t { kNone, kFuncid, kOpfuncid, kOpno, kOpnos };

  void Token(std::string_view token);
  void OpenNode(std::string_view name);
  void Fail(std::string why);
  bool FieldValue(std::string_view token, std::set<uint32_t>& into);

  ExpressionCalls calls_;
  std::vector<Frame> stack_;
  std::string partial_;    // the token being read, at most its first 64 bytes
  bool in_token_ = false;  // partial_ holds a token not yet ended
  bool escaped_ = false;   // the previous byte was a backslash
  bool node_name_next_ = false;
  Field field_ = Field::kNone;
  bool failed_ = false;
  std::string failure_;
};

}  // namespace trellis::pg
