#pragma once
// A host stream: one thread running submitted tasks in order (the host
// backend's compute, H2D and D2H streams).

#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace sa::runtime {

class StreamWorker {
 public:
  StreamWorker();
  ~StreamWorker();  // runs what is queued, then joins
  StreamWorker(const StreamWorker&) = delete;
  StreamWorker& operator=(const StreamWorker&) = delete;

  void submit(std::function<void()> task);
  // Waits until every task submitted so far has run. Rethrows the first
  // exception a task threw (and forgets it); tasks after it still ran.
  void drain();

 private:
  void loop();

  std::mutex mutex_;
  std::condition_variable work_cv_;  // a task was queued, or stop
  std::condition_variable idle_cv_;  // the queue ran dry
  std::deque<std::function<void()>> queue_;
  bool busy_ = false;
  bool stop_ = false;
  std::exception_ptr error_;
  std::thread thread_;  // last: started once the rest is ready
};

}  // namespace sa::runtime
