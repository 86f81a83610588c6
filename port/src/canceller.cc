#include "canceller.h"

namespace trellis::port {

Canceller::~Canceller() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Canceller::Cancel(std::shared_ptr<Call> call) {
  call->cancel_requested = true;
  {
    std::lock_guard lock(mu_);
    fresh_.push_back(std::move(call));
    ++asked_;
    if (!thread_.joinable()) thread_ = std::thread(&Canceller::Loop, this);
  }
  wake_.notify_one();
}

void Canceller::WaitSent(std::chrono::steady_clock::time_point deadline) {
  std::unique_lock lock(mu_);
  sent_cv_.wait_until(lock, deadline, [&] { return sent_ == asked_; });
}

void Canceller::Loop() {
  std::vector<std::shared_ptr<Call>> running;  // cancelled, handler still running
  for (;;) {
    std::vector<std::shared_ptr<Call>> batch;
    {
      std::unique_lock lock(mu_);
      auto ready = [&] { return stopping_ || !fresh_.empty(); };
      if (running.empty()) {
        wake_.wait(lock, ready);
      } else {
        wake_.wait_for(lock, kRetryInterval, ready);
      }
      if (stopping_) return;
      batch.swap(fresh_);
    }
    const uint64_t fresh_count = batch.size();
    batch.insert(batch.end(), running.begin(), running.end());
    running.clear();
    for (auto& call : batch) {
      std::lock_guard call_lock(call->mu);
      if (call->session == nullptr) continue;  // not started, or finished
      call->session->RequestCancel();
      running.push_back(call);
    }
    {
      std::lock_guard lock(mu_);
      sent_ += fresh_count;
    }
    sent_cv_.notify_all();
  }
}

}  // namespace trellis::port
