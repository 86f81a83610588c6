#include "pg/session_settings.h"

#include <array>

namespace trellis::pg {
namespace {

// In libpq's `options`, a space separates switches; "\ " is a literal space.
constexpr std::array<std::string_view, 9> kPinned = {
    "standard_conforming_strings=on",
    "DateStyle=ISO,MDY",
    "IntervalStyle=postgres",
    "extra_float_digits=1",
    "bytea_output=hex",
    "default_transaction_isolation=read\\ committed",
    "statement_timeout=0",
    "lock_timeout=0",
    "idle_in_transaction_session_timeout=0",
};

}  // namespace

std::string WithPinnedSettings(std::string_view user_options) {
  std::string options(user_options);
  for (std::string_view setting : kPinned) {
    if (!options.empty()) options += ' ';
    options += "-c ";
    options += setting;
  }
  return options;
}

}  // namespace trellis::pg
