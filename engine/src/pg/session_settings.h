// The settings every engine session pins, whatever the server, database,
// role or URL set. The engine builds SQL from statement text and round-trips
// values as text; both only work when PostgreSQL reads them as the engine
// wrote them (spec/engine.md, "Session settings"):
//
// - standard_conforming_strings = on: with it off, a backslash escapes a
//   quote in a plain string literal, so PostgreSQL would end a string the
//   grammar ended elsewhere (`WHERE s <> 'a\'`).
// - client_encoding = UTF8 (a connection key, not a setting below): the port
//   refuses every string that is not UTF-8, so what it sends is UTF-8.
// - DateStyle = ISO, MDY; IntervalStyle = postgres; extra_float_digits = 1;
//   bytea_output = hex: key values (cursors, page bounds) travel as text and
//   must read back as the same value in every session.
// - default_transaction_isolation = read committed: the engine's
//   transactions are written for its snapshot and locking rules.
// - statement_timeout = 0, lock_timeout = 0, idle_in_transaction_session_
//   timeout = 0: the port gives each call its own deadline and cancels the
//   statement at it; a role-level timeout would fail background work that
//   is allowed to run long.
// - search_path: the session's own path (the role's, the database's or the
//   URL's) without any explicit pg_catalog entry. PostgreSQL then searches
//   pg_catalog first, so objects in the user's schemas cannot shadow the
//   built-in functions and operators the engine's SQL (and a transform's
//   expressions) call, while table names and current_schema() resolve as
//   in the app's own sessions.
//
// TimeZone is left as the role and database set it: expressions over
// timestamptz in a transform should mean what they mean in the app's own
// sessions, and every session of the role gets the same zone. The engine's
// own bookkeeping uses timestamptz values, which do not depend on it.
#pragma once

#include <array>
#include <string>
#include <string_view>

namespace trellis::pg {

// One setting and the value the engine pins it to.
struct PinnedSetting {
  std::string_view name;
  std::string_view value;
};

// The settings that fix a value's text form: a date, a timestamp, an
// interval, a float or a bytea turned to text under them reads back as the
// same value in every engine session. Engine sessions pin them, and so does
// every capture function, which turns routed values to text in the writer's
// session (capture/functions.h). No value holds a space or a quote: each is
// used as is in a libpq `options` switch and in a SQL string literal.
inline constexpr std::array<PinnedSetting, 4> kTextFormSettings = {{
    {"DateStyle", "ISO,MDY"},
    {"IntervalStyle", "postgres"},
    {"extra_float_digits", "1"},
    {"bytea_output", "hex"},
}};

// `user_options` (the URL's `options`, may be empty) followed by a -c switch
// for each pinned setting: later switches win, and startup-packet settings
// win over role and database settings.
std::string WithPinnedSettings(std::string_view user_options);

// Run once right after connecting: the search_path rule above. Every name
// in it is qualified, since the path it reads may be hostile.
inline constexpr std::string_view kPinSearchPathSql = R"sql(
SELECT pg_catalog.set_config('search_path', pg_catalog.array_to_string(ARRAY(
  SELECT pg_catalog.quote_ident(p.s)
  FROM pg_catalog.unnest(pg_catalog.current_schemas(false)) WITH ORDINALITY AS p(s, n)
  WHERE p.s OPERATOR(pg_catalog.<>) 'pg_catalog'::pg_catalog.name
  ORDER BY p.n), ', '), false))sql";

}  // namespace trellis::pg
