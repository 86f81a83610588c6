// The names and payload of the wake-ups that cross ports: a worker whose
// commit makes work for another role sends `pg_notify(WakeChannel(...),
// WakeSender())` inside that transaction, and each port's wake listener
// (wake_listener.h) LISTENs on the channels of the roles it runs.
#pragma once

#include <optional>
#include <string>

namespace trellis::workers {

// The channel on which the workers of `role` ("staging" or "drain") serving
// the catalog in `schema` are woken. Notifications are per database; the
// schema keeps two catalogs of one database apart. At most 63 bytes (the
// server refuses a longer channel in pg_notify and truncates one in LISTEN,
// where two long schemas could then share one). A schema that fits is
// spelled out: "trellis.<role>.<schema>". A longer one is named by a hash
// of it: "trellis~<role>~<16 hex digits>". The two forms differ at their
// eighth byte, so a short schema can never take a long one's channel.
std::string WakeChannel(const std::string& schema, const std::string& role);

// The role a channel of `schema` wakes, if it is one of WakeChannel's.
std::optional<std::string> WakeRole(const std::string& schema, const std::string& channel);

// This process's payload for its notifications, unique per process (its
// pid and a random part: pids repeat across hosts and restarts). A listener
// skips notifications its own process sent: NudgeRole woke this process's
// workers for them already.
const std::string& WakeSender();

// `SELECT pg_notify($1, $2)`: the statement a worker adds to the
// transaction that made the work, with WakeChannel and WakeSender as
// parameters. Delivered at commit only, never for work rolled back.
inline constexpr const char* kNotifySql = "SELECT pg_notify($1::text, $2::text)";

}  // namespace trellis::workers
