#pragma once

#include <string>

#include "shutdown_watch.h"
#include "status.h"

namespace trellis::testkit {

// The files a TLS-serving cluster needs. Paths are absolute.
struct TlsFiles {
  std::string ca_cert;      // the throwaway CA clients verify the server with
  std::string server_cert;  // CN=localhost, SAN DNS:localhost and IP:127.0.0.1
  std::string server_key;   // mode 0600
};

// Writes a fresh self-signed CA and a server certificate signed by it into
// `dir` (which must exist), using the `openssl` command-line tool found on
// $PATH; the tool's output goes to `log_path`. The CA's private key is
// deleted once the server certificate is signed: nothing else may be signed
// with it. Keys are ECDSA P-256, quick to generate.
Result<TlsFiles> WriteTlsFiles(const std::string& dir, const std::string& log_path,
                               ShutdownWatch& watch);

}  // namespace trellis::testkit
