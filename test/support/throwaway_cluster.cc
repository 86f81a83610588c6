#include "throwaway_cluster.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

namespace trellis::test {

ThrowawayCluster::ThrowawayCluster(const std::string& testkit_path) {
  int in[2];
  int out[2];
  if (pipe(in) != 0 || pipe(out) != 0) {
    std::perror("pipe");
    std::abort();
  }
  pid_ = fork();
  if (pid_ == 0) {
    dup2(in[0], STDIN_FILENO);
    dup2(out[1], STDOUT_FILENO);
    close(in[0]);
    close(in[1]);
    close(out[0]);
    close(out[1]);
    execl(testkit_path.c_str(), testkit_path.c_str(), static_cast<char*>(nullptr));
    std::perror("exec trellis-testkit");
    _exit(127);
  }
  close(in[0]);
  close(out[1]);
  stdin_fd_ = in[1];
  char c;
  while (read(out[0], &c, 1) == 1 && c != '\n') url_ += c;
  close(out[0]);
  if (url_.empty()) {
    std::fprintf(stderr, "trellis-testkit at %s printed no URL\n", testkit_path.c_str());
    std::abort();
  }
}

ThrowawayCluster::~ThrowawayCluster() {
  if (stdin_fd_ >= 0) close(stdin_fd_);
  if (pid_ > 0) waitpid(pid_, nullptr, 0);
}

std::string ThrowawayCluster::UrlFor(const std::string& database) const {
  auto slash = url_.rfind('/');
  auto query = url_.find('?', slash);
  return url_.substr(0, slash + 1) + database +
         (query == std::string::npos ? "" : url_.substr(query));
}

}  // namespace trellis::test
