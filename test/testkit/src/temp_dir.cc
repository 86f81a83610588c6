#include "temp_dir.h"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <vector>

namespace trellis::testkit {

namespace fs = std::filesystem;

Result<std::unique_ptr<TempDir>> TempDir::Create() {
  const char* tmpdir = std::getenv("TMPDIR");
  const std::string base = (tmpdir != nullptr && *tmpdir != '\0') ? tmpdir : "/tmp";
  std::string pattern = (fs::path(base) / "trellis-testkit-XXXXXX").string();
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  if (mkdtemp(buffer.data()) == nullptr) {
    return Status::Error("cannot create a directory like " + pattern + ": " + std::strerror(errno));
  }
  return std::unique_ptr<TempDir>(new TempDir(buffer.data()));
}

TempDir::~TempDir() { Remove(); }

Status TempDir::ChownTo(const Credentials& owner) {
  std::error_code ec;
  if (lchown(path_.c_str(), owner.uid, owner.gid) != 0) {
    return Status::Error("cannot chown " + path_ + " to " + owner.user + ": " +
                         std::strerror(errno));
  }
  for (fs::recursive_directory_iterator it(path_, ec), end; !ec && it != end; it.increment(ec)) {
    if (lchown(it->path().c_str(), owner.uid, owner.gid) != 0) {
      return Status::Error("cannot chown " + it->path().string() + " to " + owner.user + ": " +
                           std::strerror(errno));
    }
  }
  if (ec) return Status::Error("cannot list " + path_ + ": " + ec.message());
  return Status::Ok();
}

Status TempDir::Remove() {
  if (keep_ || removed_) return Status::Ok();
  std::error_code ec;
  fs::remove_all(path_, ec);
  if (ec) return Status::Error("cannot remove " + path_ + ": " + ec.message());
  removed_ = true;
  return Status::Ok();
}

}  // namespace trellis::testkit
