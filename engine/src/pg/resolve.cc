#include "pg/resolve.h"

#include <libpq-fe.h>

#include <cstdlib>

#if TRELLIS_RESOLVE_WITH_CARES
#include <ares.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <mutex>
#endif

namespace trellis::pg {
namespace {

std::vector<std::string_view> SplitList(std::string_view list) {
  std::vector<std::string_view> items;
  if (list.empty()) return items;
  size_t start = 0;
  for (;;) {
    size_t comma = list.find(',', start);
    items.push_back(list.substr(start, comma == std::string_view::npos ? comma : comma - start));
    if (comma == std::string_view::npos) return items;
    start = comma + 1;
  }
}

// A unix-domain socket directory (or abstract socket), or the default one.
bool IsSocketHost(std::string_view host) {
  return host.empty() || host.front() == '/' || host.front() == '@';
}

void AppendItem(std::string& list, std::string_view item, bool first) {
  if (!first) list += ',';
  list += item;
}

#if TRELLIS_RESOLVE_WITH_CARES

struct Lookup {
  bool done = false;
  int status = ARES_SUCCESS;
  std::vector<std::string> addresses;
};

void OnAddrInfo(void* arg, int status, int /*timeouts*/, ares_addrinfo* result) {
  auto* lookup = static_cast<Lookup*>(arg);
  lookup->done = true;
  lookup->status = status;
  for (ares_addrinfo_node* node = result ? result->nodes : nullptr; node; node = node->ai_next) {
    const void* address =
        node->ai_family == AF_INET
            ? static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(node->ai_addr)->sin_addr)
            : static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(node->ai_addr)->sin6_addr);
    char text[INET6_ADDRSTRLEN];
    if (!inet_ntop(node->ai_family, address, text, sizeof text)) continue;
    if (std::find(lookup->addresses.begin(), lookup->addresses.end(), text) ==
        lookup->addresses.end()) {
      lookup->addresses.emplace_back(text);
    }
  }
  if (result) ares_freeaddrinfo(result);
}

// Runs the channel's queries to completion on this thread (a worker or a
// background thread about to connect; blocking is what libpq would do too).
void RunUntilDone(ares_channel channel, const Lookup& lookup) {
  while (!lookup.done) {
    ares_socket_t sockets[ARES_GETSOCK_MAXNUM];
    const int mask = ares_getsock(channel, sockets, ARES_GETSOCK_MAXNUM);
    pollfd fds[ARES_GETSOCK_MAXNUM];
    nfds_t count = 0;
    for (int i = 0; i < ARES_GETSOCK_MAXNUM; ++i) {
      short events = 0;
      if (ARES_GETSOCK_READABLE(mask, i)) events |= POLLIN;
      if (ARES_GETSOCK_WRITABLE(mask, i)) events |= POLLOUT;
      if (events) fds[count++] = pollfd{sockets[i], events, 0};
    }
    if (count == 0) return;  // nothing in flight: ares_destroy reports the query
    timeval tv;
    const timeval* wait = ares_timeout(channel, nullptr, &tv);
    const int timeout_ms = wait ? static_cast<int>(wait->tv_sec * 1000 + wait->tv_usec / 1000) : -1;
    const int ready = poll(fds, count, timeout_ms);
    if (ready < 0 && errno != EINTR) return;
    if (ready <= 0) {
      ares_process_fd(channel, ARES_SOCKET_BAD, ARES_SOCKET_BAD);  // timeouts and retries
      continue;
    }
    for (nfds_t i = 0; i < count; ++i) {
      const bool readable = fds[i].revents & (POLLIN | POLLERR | POLLHUP);
      const bool writable = fds[i].revents & POLLOUT;
      ares_process_fd(channel, readable ? fds[i].fd : ARES_SOCKET_BAD,
                      writable ? fds[i].fd : ARES_SOCKET_BAD);
    }
  }
}

Result<std::vector<std::string>> ResolveWithCares(const std::string& name) {
  static std::once_flag once;
  static int library_status = ARES_SUCCESS;
  std::call_once(once, [] { library_status = ares_library_init(ARES_LIB_INIT_ALL); });
  if (library_status != ARES_SUCCESS) {
    return Status::Internal(std::string("could not start the resolver: ") +
                            ares_strerror(library_status));
  }
  // A channel per lookup reads /etc/hosts and /etc/resolv.conf afresh, so a
  // long-running port follows changes to them, as getaddrinfo would.
  ares_channel channel;
  if (int rc = ares_init(&channel); rc != ARES_SUCCESS) {
    return Status::Connection("could not translate host name \"" + name +
                              "\" to address: " + ares_strerror(rc));
  }
  Lookup lookup;
  ares_addrinfo_hints hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  ares_getaddrinfo(channel, name.c_str(), nullptr, &hints, OnAddrInfo, &lookup);
  RunUntilDone(channel, lookup);
  ares_destroy(channel);  // completes a query still pending with ARES_EDESTRUCTION
  if (lookup.status != ARES_SUCCESS || lookup.addresses.empty()) {
    return Status::Connection(
        "could not translate host name \"" + name + "\" to address: " +
        (lookup.status != ARES_SUCCESS ? ares_strerror(lookup.status) : "no address found"));
  }
  return lookup.addresses;
}

// The conninfo's value for `keyword`, else the environment variable libpq
// would fall back to.
std::string Setting(const PQconninfoOption* options, std::string_view keyword,
                    const char* env_var) {
  for (const PQconninfoOption* o = options; o->keyword; ++o) {
    if (keyword == o->keyword && o->val && *o->val) return o->val;
  }
  const char* env = std::getenv(env_var);
  return env ? env : "";
}

#endif

}  // namespace

Result<ConnParams> PinHostAddresses(std::string_view hosts, std::string_view ports,
                                    const Resolver& resolve) {
  const auto host_list = SplitList(hosts);
  const auto port_list = SplitList(ports);
  // A mismatched port list is libpq's error to report, with its own words.
  if (port_list.size() > 1 && port_list.size() != host_list.size()) return ConnParams{};
  std::string out_hosts, out_addresses, out_ports;
  size_t entries = 0;
  bool pinned = false;
  Status last_failure;
  for (size_t i = 0; i < host_list.size(); ++i) {
    const std::string_view host = host_list[i];
    const std::string_view port = port_list.size() > 1 ? port_list[i] : std::string_view();
    std::vector<std::string> addresses{""};  // a socket: no hostaddr
    if (!IsSocketHost(host)) {
      auto resolved = resolve(std::string(host));
      if (!resolved.ok()) {
        last_failure = resolved.status();
        continue;
      }
      addresses = std::move(*resolved);
      pinned = true;
    }
    for (const auto& address : addresses) {
      AppendItem(out_hosts, host, entries == 0);
      AppendItem(out_addresses, address, entries == 0);
      AppendItem(out_ports, port, entries == 0);
      ++entries;
    }
  }
  if (entries == 0 && !last_failure.ok()) return last_failure;
  if (!pinned) return ConnParams{};
  ConnParams params{{"host", out_hosts}, {"hostaddr", out_addresses}};
  if (port_list.size() > 1) params.emplace_back("port", out_ports);
  return params;
}

Result<ConnParams> PinHostAddresses(const std::string& conninfo) {
#if TRELLIS_RESOLVE_WITH_CARES
  PQconninfoOption* options = PQconninfoParse(conninfo.c_str(), nullptr);
  if (!options) return ConnParams{};  // libpq reports the malformed conninfo
  const std::string hostaddr = Setting(options, "hostaddr", "PGHOSTADDR");
  const std::string hosts = Setting(options, "host", "PGHOST");
  const std::string ports = Setting(options, "port", "PGPORT");
  PQconninfoFree(options);
  if (!hostaddr.empty() || hosts.empty()) return ConnParams{};
  return PinHostAddresses(hosts, ports, ResolveWithCares);
#else
  (void)conninfo;
  return ConnParams{};
#endif
}

}  // namespace trellis::pg
