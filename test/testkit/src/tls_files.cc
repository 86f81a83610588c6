#include "tls_files.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <vector>

#include "executables.h"
#include "subprocess.h"

namespace trellis::testkit {
namespace {

namespace fs = std::filesystem;

constexpr const char* kValidityDays = "7";
constexpr const char* kCurve = "ec_paramgen_curve:prime256v1";

// x509v3 extensions of the server certificate: a leaf, for TLS servers, valid
// for the names the printed URL and the loopback address use.
constexpr const char* kServerExtensions =
    "basicConstraints = critical, CA:FALSE\n"
    "keyUsage = critical, digitalSignature, keyEncipherment\n"
    "extendedKeyUsage = serverAuth\n"
    "subjectAltName = DNS:localhost, IP:127.0.0.1\n";

std::string RandomSerial() {
  std::random_device random;
  const unsigned long long high = random(), low = random();
  char serial[40];
  // A positive 63-bit serial, as RFC 5280 asks.
  std::snprintf(serial, sizeof serial, "0x%llx", ((high << 32) | low) & 0x7fffffffffffffffULL);
  return serial;
}

}  // namespace

Result<TlsFiles> WriteTlsFiles(const std::string& dir, const std::string& log_path,
                               ShutdownWatch& watch) {
  Result<std::string> openssl = FindOnPath("openssl");
  if (!openssl.ok()) {
    return Status::Error("--tls needs the openssl tool: " + openssl.status().message());
  }
  const std::string& tool = openssl.value();
  const fs::path base(dir);
  const TlsFiles files{(base / "ca.crt").string(), (base / "server.crt").string(),
                       (base / "server.key").string()};
  const std::string ca_key = (base / "ca.key").string();
  const std::string request = (base / "server.csr").string();
  const std::string extensions = (base / "server.ext").string();

  if (!(std::ofstream(extensions) << kServerExtensions)) {
    return Status::Error("cannot write " + extensions);
  }
  const std::vector<std::vector<std::string>> steps = {
      {tool,
       "req",
       "-x509",
       "-new",
       "-newkey",
       "ec",
       "-pkeyopt",
       kCurve,
       "-nodes",
       "-keyout",
       ca_key,
       "-out",
       files.ca_cert,
       "-days",
       kValidityDays,
       "-subj",
       "/CN=trellis-testkit CA",
       "-addext",
       "basicConstraints=critical,CA:TRUE",
       "-addext",
       "keyUsage=critical,keyCertSign,cRLSign"},
      {tool, "req", "-new", "-newkey", "ec", "-pkeyopt", kCurve, "-nodes", "-keyout",
       files.server_key, "-out", request, "-subj", "/CN=localhost"},
      {tool, "x509", "-req", "-in", request, "-CA", files.ca_cert, "-CAkey", ca_key, "-set_serial",
       RandomSerial(), "-days", kValidityDays, "-extfile", extensions, "-out", files.server_cert},
  };
  for (const std::vector<std::string>& argv : steps) {
    SpawnSpec spec{argv, log_path, dir, std::nullopt, SIGKILL};
    if (Status status = RunToCompletion(spec, "openssl " + argv[1], watch); !status.ok()) {
      return status;
    }
  }
  std::error_code ignored;
  for (const std::string& scratch : {ca_key, request, extensions}) fs::remove(scratch, ignored);
  // PostgreSQL refuses a key file that group or others can read.
  if (chmod(files.server_key.c_str(), 0600) != 0) {
    return Status::Error("cannot chmod " + files.server_key + ": " + std::strerror(errno));
  }
  return files;
}

}  // namespace trellis::testkit
