// Work this process's workers committed: a staging batch that consumed
// captured changes, a drain that applied or charged pages, a build step. A
// waiter (await_converged) sleeps until the next such commit rather than a
// fixed interval, so it sees its writes arrive as soon as the drain that
// brought them commits. Work committed by another port's workers wakes no
// one here: a waiter still wakes at its timeout and looks.
#pragma once

#include <chrono>
#include <cstdint>

namespace trellis::workers {

// A number that grows with every NoteProgress in this process.
uint64_t ProgressMark();

// Called after a worker's commit that may let a waiter finish.
void NoteProgress();

// Waits until ProgressMark() exceeds `seen`, or `timeout` passes; returns
// the mark then.
uint64_t AwaitProgress(uint64_t seen, std::chrono::milliseconds timeout);

}  // namespace trellis::workers
