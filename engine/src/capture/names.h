// The names of capture's database objects, made here and nowhere else: the
// triggers Install creates and the disruption check looks for, and the
// functions they call. PostgreSQL cuts identifiers at 63 bytes
// (NAMEDATALEN - 1) without a word, so a name built from a long schema name
// could silently become another name; every name made here fits, and stays
// unique and stable at any legal schema name length (spec/engine.md "Capture").
#pragma once

#include <string>
#include <string_view>

namespace trellis::capture {

// The four events a source is captured on, in the order the triggers are
// installed and checked.
inline constexpr const char* kEvents[] = {"insert", "update", "delete", "truncate"};

// The longest identifier PostgreSQL keeps whole.
inline constexpr size_t kMaxIdentifierBytes = 63;

// Name of the capture trigger for `event` of the catalog in `schema`: one
// name per catalog, so two catalogs can capture the same table. It reads
// `trellis_<schema>_capture_<event>` when that fits in 63 bytes; otherwise
// `trellis_<prefix>_capture_<event>_<hash>`: the schema cut to fit on a UTF-8
// character boundary, then 16 hex digits of a hash of the full schema and
// event. A long name never equals a short one (it ends in hex digits, a
// short one in the event's name), and two long ones differ unless their
// 64-bit hashes collide.
std::string TriggerName(std::string_view schema, std::string_view event);

// Unqualified name of the capture function of source `source_id` for
// `event`; it lives in the catalog schema, so its name need not carry it.
std::string FunctionName(int source_id, std::string_view event);

// The same, qualified by the quoted catalog schema: ready for SQL text.
std::string QualifiedFunctionName(std::string_view schema, int source_id, std::string_view event);

// Name of the replication slot, and of the publication, a logical-decoding
// feed of the catalog in `schema` of `database` reads (spec/engine.md
// "Capture feeds"). A slot name may hold only lower-case letters, digits and
// underscores and is unique in the whole cluster, so it is
// `trellis_<schema's letters and digits, lowered, at most 20>_<hash>`, the
// hash (16 hex digits) taken of the database and schema names: unique per
// catalog at any name length, within 63 bytes, and the same from every port.
std::string SlotName(std::string_view database, std::string_view schema);

// 16 hex digits of a 64-bit FNV-1a hash of `text`: stable across builds and
// platforms, for names kept in a database for years.
std::string StableHash(std::string_view text);

// The longest prefix of `text` of at most `max_bytes` bytes that does not
// cut a UTF-8 character in two.
std::string_view Utf8Prefix(std::string_view text, size_t max_bytes);

}  // namespace trellis::capture
