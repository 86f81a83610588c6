// The logical feed's read of the replication slot through a walsender: a
// replication connection (libpq `replication=database`, outside the pool)
// that runs START_REPLICATION on the catalog's slot and then receives the
// same pgoutput messages a peek returns, each WAL record decoded once, with
// the decoding state kept in the walsender between batches
// (spec/engine.md "Capture feeds", "Reading the slot").
//
// One stream per staging worker, owned by the thread that runs the elected
// staging worker's steps (OwnWalStreams on election, ReleaseWalStreams
// when the election is lost). Reads never wait for data: each batch takes
// whole transactions that have arrived. Transactions are forgotten, and
// the slot confirmed to them (a standby status update's flush LSN), only
// after the staging transaction that recorded them committed
// (WalStream::Confirm); everything else stays buffered for the next batch.
// Any failure closes the stream and the next batch starts a new one from
// the slot's confirmed position; the decoder skips what was staged.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "capture/pgoutput.h"
#include "trellis/status.h"

typedef struct pg_conn PGconn;

namespace trellis::capture {

// One START_REPLICATION session on a logical slot.
// Thread-safety: not thread-safe; its owner thread's.
class WalStream {
 public:
  // A transaction received whole: its messages, Begin to Commit.
  struct Transaction {
    std::vector<std::string> messages;
    pgoutput::Lsn end = 0;  // the end of its commit record
  };

  // Connects to `url` as a replication connection and starts streaming
  // `slot` (pgoutput, publication `publication`) from its confirmed
  // position. A slot another process streams is an error with sqlstate
  // 55006.
  static Result<std::unique_ptr<WalStream>> Start(const std::string& url,
                                                  const std::string& application_name,
                                                  const std::string& slot,
                                                  const std::string& publication);
  // Ends the stream (CopyDone) and waits, briefly, for the server to
  // release the slot, so that whoever uses the slot next finds it free.
  ~WalStream();
  WalStream(const WalStream&) = delete;
  WalStream& operator=(const WalStream&) = delete;

  // Takes in what has arrived, without waiting, answering keepalives;
  // stops taking more once `budget` messages of whole transactions are
  // buffered. An error means the stream is unusable (the server closed it).
  Status Pump(size_t budget);

  // The transactions received whole and not yet confirmed, in commit order.
  const std::deque<Transaction>& transactions() const { return transactions_; }
  // The Relation messages the server sent before the first buffered
  // transaction (it sends each relation once per session), by relation:
  // a batch puts them before its transactions.
  const std::map<uint32_t, std::string>& relations() const { return relations_; }
  // Every commit record that begins before this has been received (a
  // record boundary: the end of the last commit received, or the position
  // the server's keepalive says it has decoded through).
  pgoutput::Lsn received() const { return received_; }
  // The position the slot is confirmed at.
  pgoutput::Lsn confirmed() const { return confirmed_; }
  const std::string& slot() const { return slot_; }

  // Forgets the buffered transactions ending at or before `through` and,
  // when it is past the confirmed position, confirms it to the server.
  // REQUIRES: `through` is recorded by a committed staging transaction.
  Status Confirm(pgoutput::Lsn through);

 private:
  WalStream(PGconn* conn, std::string slot, pgoutput::Lsn confirmed)
      : conn_(conn), slot_(std::move(slot)), confirmed_(confirmed) {}
  Status Message(const char* data, int size);
  Status SendStatus();
  size_t buffered_messages() const;

  PGconn* conn_;
  std::string slot_;
  pgoutput::Lsn confirmed_ = 0;
  pgoutput::Lsn received_ = 0;
  std::deque<Transaction> transactions_;
  std::map<uint32_t, std::string> relations_;
  std::optional<Transaction> open_;  // Begin received, Commit not yet
  size_t messages_ = 0;              // in transactions_
};

// ---- The stream of the staging worker running on this thread ----

// Called by the elected staging worker, on its thread: logical batches
// staged on this thread read the slot through a stream to `url`.
void OwnWalStreams(const std::string& url, const std::string& application_name);
// Called when the election is lost (the worker's connection is gone):
// closes this thread's stream; batches go back to peeking.
void ReleaseWalStreams();
// Closes this thread's stream, if any, before the slot is dropped or
// replaced; the next batch starts a new one.
void CloseWalStream();

// What a batch on this thread reads the slot with.
struct OwnedStream {
  WalStream* stream = nullptr;  // null: peek (no owner on this thread, or refused)
  bool busy = false;            // the slot is another process's for now: take nothing
  uint64_t generation = 0;      // changes with every new stream
};
// This thread's stream of `slot`, started when there is none. A stream
// that cannot be started falls back to peeking (said once in the log,
// tried again every 10 s);
// a slot streamed by another process is `busy` for up to
// kBusyBound, then an error.
Result<OwnedStream> StreamForBatch(const std::string& slot, const std::string& publication);
// After a batch's commit: confirms `through` on this thread's stream if it
// is still the one of `generation`; a failure closes it (nothing is lost:
// the next stream starts from the slot's confirmed position).
void ConfirmStream(uint64_t generation, pgoutput::Lsn through);

// ---- Catching up by peeks ----
//
// A walsender hands over a change for a few syscalls (it checks for a
// reply once per WAL record and flushes the socket once per message), about
// 10 us each on the shared 2-core machine; a peek of the same changes costs
// 3-10 us a change there, plus a decode from the slot's restart point at
// every read (bench/README.md, "Catch-up by peeks"). So a slot far behind
// is read by large peeks in the staging transaction, as the fallback does,
// and the stream is started again once it is close (spec/engine.md
// "Reading the slot", "Catching up by peeks").

// A slot whose position (the later of the staged position and the slot's
// confirmed one) is more than this many bytes of WAL below the flush LSN
// is read by peeks: 80,000-300,000 changes, 1-3 s of walsender time, far
// more than a peek's start costs on a slot kept close (spec/engine.md).
inline constexpr uint64_t kCatchUpBytes = 32ull << 20;
// Changes one catch-up peek asks for (upto_nchanges: the server still ends
// a peek only at a commit).
inline constexpr int kCatchUpChanges = 250000;

// True when the elected staging worker runs on this thread (its batches
// read the slot through a stream unless it is far behind).
bool OwnsWalStreams();
// Called by a batch of this thread's staging worker that reads `slot` by a
// peek because it is `behind` bytes behind: closes this thread's stream
// (its walsender holds the slot, which a peek needs) and, on entering the
// catch-up, says so in the log and in WalStreamFallback() until a stream
// runs again (the next StreamForBatch).
void CatchUpByPeeks(const std::string& slot, uint64_t behind);
// Batches this process has read by catch-up peeks, for tests.
uint64_t CatchUpPeeks();
// A read of `slot` by this thread's staging worker found it active in
// another process (`refusal`, 55006): OK, a pause taking nothing, for up
// to kBusyBound since the last successful read, then an error naming the
// fix. SlotRead() says a read succeeded.
Status SlotInUse(const std::string& slot, const Status& refusal);
void SlotRead();

// How long a slot may stay streamed by another process before a batch
// reports it.
constexpr auto kBusyBound = std::chrono::seconds(30);

// Why the slot is read by peeks rather than a stream, with the fix; empty
// while streaming or when no staging worker of this process reads a slot.
// status/2 reports it as capture_fallback (reads/status.cc).
std::string WalStreamFallback();

}  // namespace trellis::capture
