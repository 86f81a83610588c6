#include "capture/pgoutput.h"

#include <cstdio>

namespace trellis::capture::pgoutput {
namespace {

// Reads pgoutput's fields from one message: integers in network byte order
// (big-endian), strings NUL-terminated. A read past the end marks the
// reader failed and yields zero, so a message is decoded straight through
// and checked once at its end.
class Reader {
 public:
  explicit Reader(std::string_view bytes) : bytes_(bytes) {}

  uint64_t Unsigned(size_t width) {
    if (failed_ || bytes_.size() - at_ < width) return Fail();
    uint64_t value = 0;
    for (size_t i = 0; i < width; ++i) {
      value = (value << 8) | static_cast<unsigned char>(bytes_[at_ + i]);
    }
    at_ += width;
    return value;
  }
  uint8_t Int8() { return static_cast<uint8_t>(Unsigned(1)); }
  int16_t Int16() { return static_cast<int16_t>(Unsigned(2)); }
  int32_t Int32() { return static_cast<int32_t>(Unsigned(4)); }
  uint32_t Uint32() { return static_cast<uint32_t>(Unsigned(4)); }
  int64_t Int64() { return static_cast<int64_t>(Unsigned(8)); }
  uint64_t Uint64() { return Unsigned(8); }
  char Byte() { return static_cast<char>(Unsigned(1)); }

  std::string String() {
    if (failed_) return {};
    const size_t end = bytes_.find('\0', at_);
    if (end == std::string_view::npos) {
      Fail();
      return {};
    }
    std::string out(bytes_.substr(at_, end - at_));
    at_ = end + 1;
    return out;
  }

  std::string Bytes(size_t n) {
    if (failed_ || bytes_.size() - at_ < n) {
      Fail();
      return {};
    }
    std::string out(bytes_.substr(at_, n));
    at_ += n;
    return out;
  }

  // Marks the message malformed with `why` (the first reason is kept).
  void Malformed(std::string why) {
    if (!failed_) why_ = std::move(why);
    failed_ = true;
  }

  // The decoded message, or the error: cut short, bytes left over, or
  // malformed.
  template <typename T>
  Result<Message> Finish(char tag, T message) const {
    const std::string what = std::string("pgoutput message '") + tag + "'";
    if (failed_) {
      return Status::Internal(what + (why_.empty() ? " is cut short" : ": " + why_) +
                              "; the slot's protocol version is not the one Trellis reads (1)");
    }
    if (at_ != bytes_.size()) {
      return Status::Internal(what + " has " + std::to_string(bytes_.size() - at_) +
                              " bytes past its end; the slot's protocol version is not the one "
                              "Trellis reads (1)");
    }
    return Message(std::move(message));
  }

 private:
  uint64_t Fail() {
    failed_ = true;
    return 0;
  }

  std::string_view bytes_;
  size_t at_ = 0;
  bool failed_ = false;
  std::string why_;
};

Tuple ReadTuple(Reader& in) {
  const int16_t n = in.Int16();
  if (n < 0) {
    in.Malformed("a tuple of " + std::to_string(n) + " columns");
    return {};
  }
  Tuple tuple;
  for (int16_t i = 0; i < n; ++i) {
    Value value;
    switch (const char kind = in.Byte()) {
      case 'n':
        break;
      case 'u':
        value.kind = ValueKind::kUnchangedToast;
        break;
      case 't': {
        value.kind = ValueKind::kText;
        const int32_t length = in.Int32();
        if (length < 0) {
          in.Malformed("a value of length " + std::to_string(length));
          return {};
        }
        value.text = in.Bytes(static_cast<size_t>(length));
        break;
      }
      default:
        // 'b' (binary) exists from protocol version 2 on, when asked for.
        in.Malformed(std::string("a value of kind '") + kind + "'");
        return {};
    }
    tuple.push_back(std::move(value));
  }
  return tuple;
}

// The old tuple of an UPDATE or DELETE: 'K' (key columns) or 'O' (all).
bool IsOldTupleTag(char tag) { return tag == 'K' || tag == 'O'; }

Result<Message> DecodeUpdate(Reader& in) {
  Update u;
  u.relation_oid = in.Uint32();
  char tag = in.Byte();
  if (IsOldTupleTag(tag)) {
    u.old_is_key_only = tag == 'K';
    u.old_tuple = ReadTuple(in);
    tag = in.Byte();
  }
  if (tag != 'N') in.Malformed(std::string("an UPDATE's new tuple tagged '") + tag + "'");
  u.new_tuple = ReadTuple(in);
  return in.Finish('U', std::move(u));
}

}  // namespace

Result<Message> Decode(std::string_view bytes) {
  if (bytes.empty()) return Status::Internal("an empty pgoutput message");
  Reader in(bytes.substr(1));
  switch (const char tag = bytes[0]) {
    case 'B': {
      Begin b;
      b.final_lsn = in.Uint64();
      b.commit_time_us = in.Int64();
      b.xid = in.Uint32();
      return in.Finish(tag, b);
    }
    case 'C': {
      Commit c;
      in.Int8();  // flags: none defined
      c.commit_lsn = in.Uint64();
      c.end_lsn = in.Uint64();
      c.commit_time_us = in.Int64();
      return in.Finish(tag, c);
    }
    case 'O': {
      Origin o;
      o.commit_lsn = in.Uint64();
      o.name = in.String();
      return in.Finish(tag, std::move(o));
    }
    case 'R': {
      Relation r;
      r.oid = in.Uint32();
      r.schema = in.String();
      r.name = in.String();
      r.replica_identity = in.Byte();
      const int16_t n = in.Int16();
      for (int16_t i = 0; i < n; ++i) {
        RelationColumn c;
        c.key = (in.Int8() & 1) != 0;
        c.name = in.String();
        c.type_oid = in.Uint32();
        c.type_modifier = in.Int32();
        r.columns.push_back(std::move(c));
      }
      return in.Finish(tag, std::move(r));
    }
    case 'Y': {
      Type t;
      t.oid = in.Uint32();
      t.schema = in.String();
      t.name = in.String();
      return in.Finish(tag, std::move(t));
    }
    case 'I': {
      Insert i;
      i.relation_oid = in.Uint32();
      if (const char n = in.Byte(); n != 'N') {
        in.Malformed(std::string("an INSERT's tuple tagged '") + n + "'");
      }
      i.new_tuple = ReadTuple(in);
      return in.Finish(tag, std::move(i));
    }
    case 'U':
      return DecodeUpdate(in);
    case 'D': {
      Delete d;
      d.relation_oid = in.Uint32();
      const char old = in.Byte();
      if (!IsOldTupleTag(old)) {
        in.Malformed(std::string("a DELETE's old tuple tagged '") + old + "'");
      }
      d.old_is_key_only = old == 'K';
      d.old_tuple = ReadTuple(in);
      return in.Finish(tag, std::move(d));
    }
    case 'T': {
      Truncate t;
      const int32_t n = in.Int32();
      const uint8_t options = in.Int8();
      t.cascade = (options & 1) != 0;
      t.restart_identity = (options & 2) != 0;
      for (int32_t i = 0; i < n; ++i) t.relation_oids.push_back(in.Uint32());
      return in.Finish(tag, std::move(t));
    }
    default:
      return Status::Internal(std::string("a pgoutput message with tag '") + tag +
                              "', which protocol version 1 does not define");
  }
}

std::string LsnText(Lsn lsn) {
  char text[32];
  std::snprintf(text, sizeof text, "%X/%X", static_cast<unsigned>(lsn >> 32),
                static_cast<unsigned>(lsn & 0xFFFFFFFFu));
  return text;
}

}  // namespace trellis::capture::pgoutput
