// The capture tools of `trellis-port` (spec/protocol.md section 9). They run
// as ordinary command-line programs: stdout is theirs.
#pragma once

#include <string>

namespace trellis::port {

// `trellis-port decode FILE`: one readable line per frame on stdout.
// Exit 0; 1 when the file cannot be read or ends mid-record.
int RunDecode(const std::string& path);

// `trellis-port replay FILE --url URL`: re-sends the captured requests to a
// fresh port against URL and compares the replies. Exit 0 when every reply
// matches, 1 when some differ, 2 when the replay could not run.
int RunReplay(const std::string& path, const std::string& url);

}  // namespace trellis::port
