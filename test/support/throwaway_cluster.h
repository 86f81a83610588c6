// A throwaway PostgreSQL cluster for a C++ test: runs the built
// trellis-testkit as a child with a pipe on its stdin, reads its URL, and
// closes the pipe on destruction, which makes the testkit remove the cluster.
// Used by the engine, port and benchmark suites.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

namespace trellis::test {

class ThrowawayCluster {
 public:
  // Starts a cluster with the testkit at `testkit_path`. Aborts the test
  // binary with a message on stderr when it cannot: nothing can run without.
  explicit ThrowawayCluster(const std::string& testkit_path,
                            const std::vector<std::string>& args = {});
  ~ThrowawayCluster();
  ThrowawayCluster(const ThrowawayCluster&) = delete;
  ThrowawayCluster& operator=(const ThrowawayCluster&) = delete;

  // postgresql://postgres@127.0.0.1:PORT/postgres
  const std::string& url() const { return url_; }
  // The URL of another database of the cluster.
  std::string UrlFor(const std::string& database) const;

 private:
  pid_t pid_ = -1;
  int stdin_fd_ = -1;
  std::string url_;
};

}  // namespace trellis::test
