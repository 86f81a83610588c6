// Writes the bytes of every conformance vector into a directory, one file per
// case, as the seed corpus of protocol_fuzz (fuzz.sh runs it).
//   protocol_fuzz_seeds <spec/conformance dir> <corpus dir>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "vectors.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s CONFORMANCE_DIR CORPUS_DIR\n", argv[0]);
    return 2;
  }
  try {
    const auto cases = trellis::testing::LoadVectors(argv[1]);
    std::filesystem::create_directories(argv[2]);
    for (const auto& c : cases) {
      std::string file = c.kind + "-" + c.name;
      for (auto& ch : file) {
        if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '-') ch = '_';
      }
      std::ofstream out(std::filesystem::path(argv[2]) / file, std::ios::binary);
      out.write(c.bytes.data(), static_cast<std::streamsize>(c.bytes.size()));
    }
    std::printf("%zu seeds written to %s\n", cases.size(), argv[2]);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  return 0;
}
