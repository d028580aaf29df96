#include "runtime/host/stream_worker.h"

#include <utility>

namespace sa::runtime {

StreamWorker::StreamWorker() : thread_([this] { loop(); }) {}

StreamWorker::~StreamWorker() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  work_cv_.notify_one();
  thread_.join();
}

void StreamWorker::submit(std::function<void()> task) {
  {
    std::lock_guard lock(mutex_);
    queue_.push_back(std::move(task));
  }
  work_cv_.notify_one();
}

void StreamWorker::drain() {
  std::unique_lock lock(mutex_);
  idle_cv_.wait(lock, [this] { return queue_.empty() && !busy_; });
  if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
}

void StreamWorker::loop() {
  std::unique_lock lock(mutex_);
  while (true) {
    work_cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stop, and nothing left
    std::function<void()> task = std::move(queue_.front());
    queue_.pop_front();
    busy_ = true;
    lock.unlock();
    std::exception_ptr error;
    try {
      task();
    } catch (...) {
      error = std::current_exception();
    }
    lock.lock();
    busy_ = false;
    if (error && !error_) error_ = error;
    if (queue_.empty()) idle_cv_.notify_all();
  }
}

}  // namespace sa::runtime
