#include "pgbench_run.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "bench_db.h"

namespace trellis::bench {
namespace {

std::string ShellQuote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// The number after `label` on the first line holding it, if any.
std::optional<double> NumberAfter(const std::string& text, const std::string& label) {
  const auto at = text.find(label);
  if (at == std::string::npos) return std::nullopt;
  return std::strtod(text.c_str() + at + label.size(), nullptr);
}

// A script file that removes itself when the run is over.
class ScriptFile {
 public:
  explicit ScriptFile(const std::string& text) {
    char name[] = "/tmp/trellis-bench-XXXXXX.sql";
    const int fd = mkstemps(name, 4);
    if (fd < 0) throw BenchError("mkstemps failed");
    close(fd);
    path_ = name;
    std::ofstream(path_) << text;
  }
  ~ScriptFile() { std::remove(path_.c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace

PgbenchResult RunPgbench(const PgbenchRun& run) {
  ScriptFile script(run.script);
  // -n: no vacuum of pgbench's own tables (there are none); prepared
  // statements, as an application with a driver would use.
  std::string cmd = ShellQuote(run.binary) + " -n -M prepared -c " + std::to_string(run.clients) +
                    " -j " + std::to_string(run.clients > 1 ? 2 : 1) + " -T " +
                    std::to_string(run.seconds) + " -f " + ShellQuote(script.path());
  if (run.rate) cmd += " -R " + std::to_string(*run.rate);
  cmd += " " + ShellQuote(run.url) + " 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  if (!pipe) throw BenchError("cannot start pgbench: " + cmd);
  PgbenchResult result;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, pipe)) > 0) result.output.append(buf, n);
  const int status = pclose(pipe);
  const auto tps = NumberAfter(result.output, "tps = ");
  if (status != 0 || !tps) throw BenchError("pgbench failed: " + cmd + "\n" + result.output);
  result.tps = *tps;
  result.latency_ms = NumberAfter(result.output, "latency average = ").value_or(0);
  result.transactions = static_cast<long>(
      NumberAfter(result.output, "number of transactions actually processed: ").value_or(0));
  return result;
}

}  // namespace trellis::bench
