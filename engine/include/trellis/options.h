// Options a handle connects with, validated by the port before use.
#pragma once

#include <string>

namespace trellis {

struct ConnectOptions {
  std::string url;                 // libpq URL or key=value conninfo
  std::string schema = "trellis";  // the catalog schema
  std::string application_name = "trellis";
  // How the catalog captures writes: "triggers", "logical" or "auto"
  // (Session::EnsureCaptureMode); only a handle that runs staging applies it.
  std::string capture_mode = "triggers";
};

// The URL with any password replaced by "***": safe for logs, errors, config.
std::string RedactUrl(const std::string& url);

}  // namespace trellis
