// Quoting of identifiers for SQL. Every name that reaches SQL goes through
// these: a quoted identifier can hold any text and still be one identifier,
// so no name can inject SQL. Pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "grammar/ast.h"

namespace trellis::grammar {

// Always double-quotes, doubling embedded double quotes:
// QuoteIdent("a\"b") == "\"a\"\"b\"". REQUIRES: `name` holds no NUL byte
// (the parser refuses them).
std::string QuoteIdent(std::string_view name);

// `"schema"."name"`, or `"name"` when there is no schema.
std::string QuoteQualified(const QualifiedName& name);

}  // namespace trellis::grammar
