// pgoutput messages decoded from bytes laid out as the PostgreSQL manual's
// "Logical Replication Message Formats" defines them (protocol version 1):
// every field read, every cut or overlong message refused; and the messages
// a real slot of a logical cluster (trellis-testkit --logical) hands over
// for each kind of write capture must see.
#include <catch2/catch.hpp>

#include "capture/pgoutput.h"
#include "pg/connection.h"
#include "throwaway_cluster.h"

namespace trellis::capture::pgoutput {
namespace {

// Builds a message field by field, big-endian as the protocol sends it.
class Bytes {
 public:
  explicit Bytes(char tag) { out_.push_back(tag); }
  Bytes& Int(uint64_t value, int width) {
    for (int i = width - 1; i >= 0; --i) out_.push_back(static_cast<char>(value >> (8 * i)));
    return *this;
  }
  Bytes& Byte(char c) {
    out_.push_back(c);
    return *this;
  }
  Bytes& String(const std::string& s) {
    out_ += s;
    out_.push_back('\0');
    return *this;
  }
  Bytes& Text(const std::string& s) {
    Byte('t').Int(s.size(), 4);
    out_ += s;
    return *this;
  }
  const std::string& str() const { return out_; }

 private:
  std::string out_;
};

template <typename T>
T DecodeAs(const std::string& bytes) {
  auto decoded = Decode(bytes);
  INFO((decoded.ok() ? std::string() : decoded.status().ToString()));
  REQUIRE(decoded.ok());
  REQUIRE(std::holds_alternative<T>(decoded.value()));
  return std::get<T>(decoded.value());
}

// Every message of the test, to be cut and extended.
std::vector<std::string> AllMessages() {
  return {
      Bytes('B').Int(0x16B374D848, 8).Int(1234567, 8).Int(742, 4).str(),
      Bytes('C').Byte(0).Int(0x10, 8).Int(0x38, 8).Int(99, 8).str(),
      Bytes('R')
          .Int(16385, 4)
          .String("public")
          .String("widgets")
          .Byte('d')
          .Int(2, 2)
          .Byte(1)
          .String("id")
          .Int(23, 4)
          .Int(0xFFFFFFFF, 4)
          .Byte(0)
          .String("name")
          .Int(25, 4)
          .Int(0xFFFFFFFF, 4)
          .str(),
      Bytes('I').Int(16385, 4).Byte('N').Int(2, 2).Text("7").Byte('n').str(),
      Bytes('U')
          .Int(16385, 4)
          .Byte('O')
          .Int(2, 2)
          .Text("7")
          .Text("old")
          .Byte('N')
          .Int(2, 2)
          .Text("7")
          .Byte('u')
          .str(),
      Bytes('D').Int(16385, 4).Byte('K').Int(2, 2).Text("7").Byte('n').str(),
      Bytes('T').Int(2, 4).Byte(3).Int(16385, 4).Int(16390, 4).str(),
      Bytes('O').Int(0x20, 8).String("elsewhere").str(),
      Bytes('Y').Int(90001, 4).String("public").String("mood").str(),
  };
}

TEST_CASE("begin and commit carry the transaction's LSNs, time and xid", "[pgoutput]") {
  const auto messages = AllMessages();
  const auto b = DecodeAs<Begin>(messages[0]);
  CHECK(b.final_lsn == 0x16B374D848);
  CHECK(b.commit_time_us == 1234567);
  CHECK(b.xid == 742);
  const auto c = DecodeAs<Commit>(messages[1]);
  CHECK(c.commit_lsn == 0x10);
  CHECK(c.end_lsn == 0x38);
  CHECK(c.commit_time_us == 99);
}

TEST_CASE("a relation message names its columns, key flags and types", "[pgoutput]") {
  const auto r = DecodeAs<Relation>(AllMessages()[2]);
  CHECK(r.oid == 16385);
  CHECK(r.schema == "public");
  CHECK(r.name == "widgets");
  CHECK(r.replica_identity == 'd');
  REQUIRE(r.columns.size() == 2);
  CHECK(r.columns[0].key);
  CHECK(r.columns[0].name == "id");
  CHECK(r.columns[0].type_oid == 23);
  CHECK(r.columns[0].type_modifier == -1);
  CHECK_FALSE(r.columns[1].key);
  CHECK(r.columns[1].name == "name");
}

TEST_CASE("row changes carry text values, NULLs and unchanged out-of-line values", "[pgoutput]") {
  const auto messages = AllMessages();
  const auto i = DecodeAs<Insert>(messages[3]);
  CHECK(i.relation_oid == 16385);
  REQUIRE(i.new_tuple.size() == 2);
  CHECK(i.new_tuple[0].kind == ValueKind::kText);
  CHECK(i.new_tuple[0].text == "7");
  CHECK(i.new_tuple[1].kind == ValueKind::kNull);

  const auto u = DecodeAs<Update>(messages[4]);
  REQUIRE(u.old_tuple);
  CHECK_FALSE(u.old_is_key_only);
  CHECK((*u.old_tuple)[1].text == "old");
  REQUIRE(u.new_tuple.size() == 2);
  CHECK(u.new_tuple[1].kind == ValueKind::kUnchangedToast);

  const auto d = DecodeAs<Delete>(messages[5]);
  CHECK(d.old_is_key_only);
  CHECK(d.old_tuple[0].text == "7");

  const auto t = DecodeAs<Truncate>(messages[6]);
  CHECK(t.cascade);
  CHECK(t.restart_identity);
  CHECK(t.relation_oids == std::vector<uint32_t>{16385, 16390});
}

TEST_CASE("an UPDATE without an old tuple has only its new one", "[pgoutput]") {
  const auto u = DecodeAs<Update>(Bytes('U').Int(16385, 4).Byte('N').Int(1, 2).Text("8").str());
  CHECK_FALSE(u.old_tuple);
  CHECK(u.new_tuple[0].text == "8");
}

TEST_CASE("a value holding a NUL byte or none at all is read by its length", "[pgoutput]") {
  const std::string nul("a\0b", 3);
  const auto i =
      DecodeAs<Insert>(Bytes('I').Int(1, 4).Byte('N').Int(2, 2).Text(nul).Text("").str());
  CHECK(i.new_tuple[0].text == nul);
  CHECK(i.new_tuple[1].kind == ValueKind::kText);
  CHECK(i.new_tuple[1].text.empty());
}

TEST_CASE("every message cut short anywhere, or one byte too long, is an error", "[pgoutput]") {
  for (const auto& message : AllMessages()) {
    for (size_t n = 0; n < message.size(); ++n) {
      const auto cut = Decode(message.substr(0, n));
      INFO("message '" << message[0] << "' cut to " << n << " bytes");
      CHECK_FALSE(cut.ok());
    }
    const auto longer = Decode(message + "x");
    REQUIRE_FALSE(longer.ok());
    CHECK(longer.status().message().find("past its end") != std::string::npos);
  }
}

TEST_CASE("a tag or value kind protocol version 1 lacks is an error naming it", "[pgoutput]") {
  const auto unknown = Decode("S1234");
  REQUIRE_FALSE(unknown.ok());
  CHECK(unknown.status().message().find("tag 'S'") != std::string::npos);
  const auto binary = Decode(Bytes('I').Int(1, 4).Byte('N').Int(1, 2).Byte('b').Int(0, 4).str());
  REQUIRE_FALSE(binary.ok());
  CHECK(binary.status().message().find("value of kind 'b'") != std::string::npos);
}

TEST_CASE("an LSN prints as pg_lsn does", "[pgoutput]") {
  CHECK(LsnText(0) == "0/0");
  CHECK(LsnText(0x16B374D848) == "16/B374D848");
}

// The bytes of a bytea's hex text form ("\\x0a1b...").
std::string FromHex(const std::string& text) {
  REQUIRE(text.rfind("\\x", 0) == 0);
  std::string out;
  for (size_t i = 2; i + 1 < text.size(); i += 2) {
    out.push_back(static_cast<char>(std::stoi(text.substr(i, 2), nullptr, 16)));
  }
  return out;
}

// A one-line summary of a decoded message, for comparing a stream whole.
std::string Summary(const Message& m, const std::string& table_oid) {
  auto tuple = [](const Tuple& t) {
    std::string out = "(";
    for (const auto& v : t) {
      if (out.size() > 1) out += ",";
      out += v.kind == ValueKind::kNull             ? "null"
             : v.kind == ValueKind::kUnchangedToast ? "unchanged"
                                                    : v.text.substr(0, 12);
    }
    return out + ")";
  };
  auto rel = [&](uint32_t oid) { return std::to_string(oid) == table_oid ? "t" : "?"; };
  if (std::holds_alternative<Begin>(m)) return "B";
  if (std::holds_alternative<Commit>(m)) return "C";
  if (const auto* r = std::get_if<Relation>(&m)) {
    std::string out = std::string("R ") + rel(r->oid) + " " + r->schema + "." + r->name + " " +
                      r->replica_identity;
    for (const auto& c : r->columns) out += std::string(" ") + (c.key ? "*" : "") + c.name;
    return out;
  }
  if (const auto* i = std::get_if<Insert>(&m))
    return std::string("I ") + rel(i->relation_oid) + tuple(i->new_tuple);
  if (const auto* u = std::get_if<Update>(&m)) {
    std::string old = !u->old_tuple ? "" : (u->old_is_key_only ? "K" : "O") + tuple(*u->old_tuple);
    return std::string("U ") + rel(u->relation_oid) + old + tuple(u->new_tuple);
  }
  if (const auto* d = std::get_if<Delete>(&m)) {
    return std::string("D ") + rel(d->relation_oid) + (d->old_is_key_only ? "K" : "O") +
           tuple(d->old_tuple);
  }
  if (const auto* t = std::get_if<Truncate>(&m)) {
    return std::string("T ") + rel(t->relation_oids.at(0)) + (t->cascade ? " cascade" : "");
  }
  return "other";
}

TEST_CASE("a pgoutput slot's messages for every kind of write decode", "[pgoutput][logical]") {
  test::ThrowawayCluster cluster(TRELLIS_TESTKIT_BINARY, {"--logical"});
  auto opened = pg::Connection::Open(cluster.url(), "pgoutput_test");
  REQUIRE(opened.ok());
  pg::Connection& conn = *opened.value();
  auto sql = [&](const std::string& statement) {
    const Status done = conn.Exec(statement);
    INFO(statement << ": " << done.ToString());
    REQUIRE(done.ok());
  };
  sql("CREATE TABLE t (id int PRIMARY KEY, v text, big text)");
  sql("ALTER TABLE t ALTER COLUMN big SET STORAGE EXTERNAL");
  sql("CREATE PUBLICATION pub FOR TABLE t");
  sql("SELECT pg_create_logical_replication_slot('slot', 'pgoutput')");
  auto oid = conn.Query("SELECT 't'::regclass::oid::text");
  REQUIRE(oid.ok());
  const std::string table_oid = oid->text(0, 0);

  sql("INSERT INTO t VALUES (1, 'a', repeat('x', 5000)), (2, NULL, NULL)");
  sql("UPDATE t SET v = 'b' WHERE id = 1");  // big is out of line and unchanged
  sql("UPDATE t SET id = 3 WHERE id = 2");   // the key changed: its old key is sent
  sql("DELETE FROM t WHERE id = 3");
  sql("ALTER TABLE t REPLICA IDENTITY FULL");
  sql("UPDATE t SET v = 'c' WHERE id = 1");  // the whole old row is sent
  sql("TRUNCATE t");

  auto rows = conn.Query(
      "SELECT lsn::text, xid::text, data FROM pg_logical_slot_peek_binary_changes('slot', NULL, "
      "NULL, 'proto_version', '1', 'publication_names', 'pub')");
  REQUIRE(rows.ok());
  std::vector<std::string> stream;
  Lsn last_commit = 0;
  for (size_t r = 0; r < rows->size(); ++r) {
    auto decoded = Decode(FromHex(rows->text(r, 2)));
    INFO("row " << r << " at " << rows->text(r, 0));
    REQUIRE(decoded.ok());
    if (const auto* b = std::get_if<Begin>(&decoded.value())) {
      // Begin names the transaction the row is of, and its commit's LSN.
      CHECK(std::to_string(b->xid) == rows->text(r, 1));
      CHECK(b->final_lsn > last_commit);
    }
    if (const auto* c = std::get_if<Commit>(&decoded.value())) {
      CHECK(LsnText(c->end_lsn) == rows->text(r, 0));
      CHECK(c->end_lsn > c->commit_lsn);
      last_commit = c->commit_lsn;
    }
    stream.push_back(Summary(decoded.value(), table_oid));
  }
  // A relation's shape is sent before its first change in the decoding
  // session and again once it changed (here its replica identity); when
  // else it is repeated is the server's business, so the changes are
  // compared without them, and the shapes apart.
  std::vector<std::string> changes;
  std::vector<std::string> shapes;
  for (const auto& m : stream) (m.rfind("R ", 0) == 0 ? shapes : changes).push_back(m);
  const std::vector<std::string> expected = {"B",
                                             "I t(1,a,xxxxxxxxxxxx)",
                                             "I t(2,null,null)",
                                             "C",
                                             "B",
                                             "U t(1,b,unchanged)",
                                             "C",  // an out-of-line value left as it was
                                             "B",
                                             "U tK(2,null,null)(3,null,null)",
                                             "C",  // the old key, as the key changed
                                             "B",
                                             "D tK(3,null,null)",
                                             "C",  // the old key
                                             "B",
                                             "U tO(1,b,xxxxxxxxxxxx)(1,c,unchanged)",
                                             "C",  // REPLICA IDENTITY FULL: the old row
                                             "B",
                                             "T t",
                                             "C"};
  CHECK(changes == expected);
  REQUIRE(shapes.size() >= 2);
  CHECK(shapes.front() == "R t public.t d *id v big");
  CHECK(stream.at(1) == shapes.front());  // before the first change
  CHECK(shapes.back() == "R t public.t f *id *v *big");
}

}  // namespace
}  // namespace trellis::capture::pgoutput
