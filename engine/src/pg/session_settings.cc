#include "pg/session_settings.h"

#include <array>

namespace trellis::pg {
namespace {

// In libpq's `options`, a space separates switches; "\ " is a literal space.
// The settings of kTextFormSettings follow these.
constexpr std::array<std::string_view, 5> kPinned = {
    "standard_conforming_strings=on",
    "default_transaction_isolation=read\\ committed",
    "statement_timeout=0",
    "lock_timeout=0",
    "idle_in_transaction_session_timeout=0",
};

}  // namespace

std::string WithPinnedSettings(std::string_view user_options) {
  std::string options(user_options);
  auto add = [&options](std::string_view setting) {
    if (!options.empty()) options += ' ';
    options += "-c ";
    options += setting;
  };
  for (std::string_view setting : kPinned) add(setting);
  for (const PinnedSetting& setting : kTextFormSettings) {
    add(std::string(setting.name) + "=" + std::string(setting.value));
  }
  return options;
}

}  // namespace trellis::pg
