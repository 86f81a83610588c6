// A unit that is one statement over the whole target, with nothing to cut
// (making the target's key at the end of a first build).
#pragma once

#include <string>

#include "drain/unit.h"

namespace trellis::drain {

class StatementUnit final : public UncutUnit {
 public:
  StatementUnit(std::string kind, std::string sql) : kind_(std::move(kind)), sql_(std::move(sql)) {}

  std::string_view kind() const override { return kind_; }
  std::string Describe() const override { return "the whole target"; }
  Result<long> Apply(pg::Connection& conn) override {
    auto done = conn.Query(sql_);
    if (!done.ok()) return done.status();
    return done->affected;
  }

 private:
  std::string kind_;
  std::string sql_;
};

}  // namespace trellis::drain
