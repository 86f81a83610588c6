// Giving memory back after a large call. glibc's malloc keeps what a call
// freed for reuse: per-thread arenas keep their peak, and after a large
// block is freed its dynamic mmap threshold rises, so the next large blocks
// come from the arenas too. Ten concurrent 1 MB statements used to leave the
// idle port holding ~520 MB. Measured in bench/ (bench/README.md, "Memory").
#pragma once

namespace trellis::port {

// Call once at start, before any thread: a fixed mmap threshold (blocks of
// 128 KiB or more are mapped, and unmapped when freed) and at most four
// arenas (pool threads share them; they spend their time in libpq, not
// malloc).
void ConfigureMalloc();

// Returns the free memory of every arena to the OS (malloc_trim). The pool
// calls it when it goes idle, at most once per 100 ms. Thread-safe.
void ReleaseFreedMemory();

}  // namespace trellis::port
