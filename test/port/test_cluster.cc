#include "test_cluster.h"

#include <fcntl.h>
#include <libpq-fe.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <stdexcept>

extern char** environ;

namespace trellis::port_test {
namespace {

constexpr int kStartTimeoutMs = 120'000;

// Owns the testkit process: its stdin stays open while the cluster is
// needed; closing it tells the testkit to stop the cluster and clean up.
class Testkit {
 public:
  Testkit() {
    int in_pipe[2];
    int out_pipe[2];
    if (pipe2(in_pipe, O_CLOEXEC) != 0 || pipe2(out_pipe, O_CLOEXEC) != 0) {
      throw std::runtime_error(std::string("pipe2: ") + std::strerror(errno));
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, in_pipe[0], STDIN_FILENO);
    posix_spawn_file_actions_adddup2(&actions, out_pipe[1], STDOUT_FILENO);
    std::string exe = TRELLIS_TESTKIT_BINARY;
    char* argv[] = {exe.data(), nullptr};
    const int spawned = posix_spawn(&pid_, exe.c_str(), &actions, nullptr, argv, environ);
    posix_spawn_file_actions_destroy(&actions);
    close(in_pipe[0]);
    close(out_pipe[1]);
    stdin_ = in_pipe[1];
    if (spawned != 0) {
      close(out_pipe[0]);
      throw std::runtime_error("cannot start " + exe + ": " + std::strerror(spawned));
    }
    url_ = ReadLine(out_pipe[0]);
    close(out_pipe[0]);
    if (url_.empty()) throw std::runtime_error("trellis-testkit printed no URL");
  }

  ~Testkit() {
    close(stdin_);
    int status = 0;
    waitpid(pid_, &status, 0);
  }

  const std::string& url() const { return url_; }

 private:
  static std::string ReadLine(int fd) {
    std::string line;
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::milliseconds(kStartTimeoutMs);
    while (std::chrono::steady_clock::now() < deadline) {
      pollfd pfd{fd, POLLIN, 0};
      if (poll(&pfd, 1, 100) <= 0) continue;
      char c;
      const ssize_t n = read(fd, &c, 1);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0 || c == '\n') return line;
      line.push_back(c);
    }
    return "";
  }

  pid_t pid_ = -1;
  int stdin_ = -1;
  std::string url_;
};

}  // namespace

const std::string& ClusterUrl() {
  static const std::unique_ptr<Testkit> testkit = std::make_unique<Testkit>();
  return testkit->url();
}

std::string WithPassword(const std::string& url, const std::string& password) {
  // postgresql://postgres@host... -> postgresql://postgres:password@host...
  const size_t at = url.find('@');
  if (at == std::string::npos) throw std::runtime_error("no user in " + url);
  return url.substr(0, at) + ":" + password + url.substr(at);
}

PgClient::PgClient(const std::string& url) : conn_(PQconnectdb(url.c_str())) {
  if (PQstatus(conn_) != CONNECTION_OK) {
    std::string message = PQerrorMessage(conn_);
    PQfinish(conn_);
    throw std::runtime_error("cannot connect: " + message);
  }
}

PgClient::~PgClient() { PQfinish(conn_); }

std::vector<std::optional<std::string>> PgClient::Column(const std::string& sql) {
  PGresult* res = PQexec(conn_, sql.c_str());
  const auto status = PQresultStatus(res);
  if (status != PGRES_TUPLES_OK && status != PGRES_COMMAND_OK) {
    std::string message = PQresultErrorMessage(res);
    PQclear(res);
    throw std::runtime_error(sql + ": " + message);
  }
  std::vector<std::optional<std::string>> column;
  for (int r = 0; r < PQntuples(res); ++r) {
    if (PQgetisnull(res, r, 0)) {
      column.emplace_back(std::nullopt);
    } else {
      column.emplace_back(PQgetvalue(res, r, 0));
    }
  }
  PQclear(res);
  return column;
}

std::optional<std::string> PgClient::Scalar(const std::string& sql) {
  auto column = Column(sql);
  return column.empty() ? std::nullopt : column.front();
}

}  // namespace trellis::port_test
