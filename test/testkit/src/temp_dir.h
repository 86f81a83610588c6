#pragma once

#include <memory>
#include <string>

#include "server_account.h"
#include "status.h"

namespace trellis::testkit {

// A fresh private directory named trellis-testkit-XXXXXX under $TMPDIR (or
// /tmp when unset), holding one cluster: its data directory, socket, logs
// and TLS files. Destruction removes it with everything in it, unless Keep()
// was called. Thread-safety: not thread-safe.
class TempDir {
 public:
  static Result<std::unique_ptr<TempDir>> Create();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }

  // Hands the directory and everything already in it to `owner`, so a server
  // running as that account can create files in it and read its keys.
  Status ChownTo(const Credentials& owner);

  // Removes the directory tree now (unless kept); idempotent.
  Status Remove();

  // Leaves the directory behind on destruction (the --keep option).
  void Keep() { keep_ = true; }

 private:
  explicit TempDir(std::string path) : path_(std::move(path)) {}

  const std::string path_;
  bool keep_ = false;
  bool removed_ = false;
};

}  // namespace trellis::testkit
