// The command lines of the benchmark programs: `--flag value` pairs, where
// a bad or unknown flag prints the problem and the usage and exits with 2.
#pragma once

#include <cstdlib>
#include <functional>
#include <iostream>
#include <string>

namespace trellis::bench {

class Flags {
 public:
  Flags(int argc, char** argv, std::string usage) : argc_(argc), argv_(argv), usage_(usage) {}

  // Calls `take(flag, value)` for each pair; `take` returns false for a flag
  // it does not know.
  void Each(const std::function<bool(const std::string&, const std::string&)>& take) const {
    for (int i = 1; i < argc_; ++i) {
      const std::string flag = argv_[i];
      if (flag == "--help" || flag == "-h") Fail("");
      if (i + 1 >= argc_) Fail(flag + " needs a value");
      if (!take(flag, argv_[++i])) Fail("unknown flag " + flag);
    }
  }

  // `value` as a positive number, or the usage.
  long Positive(const std::string& flag, const std::string& value) const {
    char* end = nullptr;
    const long n = std::strtol(value.c_str(), &end, 10);
    if (*end != '\0' || n <= 0) Fail(flag + ": not a positive number: " + value);
    return n;
  }

  [[noreturn]] void Fail(const std::string& problem) const {
    std::cerr << problem << "\n" << usage_;
    std::exit(2);
  }

 private:
  int argc_;
  char** argv_;
  std::string usage_;
};

}  // namespace trellis::bench
