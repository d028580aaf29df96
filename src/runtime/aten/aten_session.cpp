#include "runtime/aten/aten_session.h"

#include <climits>
#include <cstring>
#include <utility>

#include <fmt/format.h>

#include "runtime/mpi/ranks.h"
#include "util/error.h"

namespace sa::runtime {

AtenSession::AtenSession(Graph graph, Plan plan, AtenProgram program, ValuesFile initial,
                         AtenOptions options, RankInfo ranks)
    : graph_(std::move(graph)),
      plan_(std::move(plan)),
      program_(std::move(program)),
      initial_(std::move(initial)),
      options_(std::move(options)),
      ranks_(ranks),
      batch_(graph_.tensors.size()) {
  thread_ = std::thread([this] { run(); });
}

AtenSession::~AtenSession() {
  try {
    finish();
  } catch (...) {
  }
  if (thread_.joinable()) thread_.join();
}

void AtenSession::run() {
  try {
    AtenRunOptions o;
    o.iterations = INT_MAX;
    o.aten = options_;
    o.ranks = ranks_;
    o.next_batch = [this](int it) { return wait_for_batch(it); };
    o.batch_value = [this](TensorId t, std::byte* host, int64_t bytes) {
      // Under the lock: step() may not touch batch_ while an iteration runs,
      // but a reader of this thread's writes needs the ordering all the same.
      std::lock_guard<std::mutex> lock(m_);
      const std::vector<std::byte>& v = batch_[t];
      const size_t n = std::min(v.size(), static_cast<size_t>(bytes));
      std::memcpy(host, v.data(), n);
      std::memset(host + n, 0, static_cast<size_t>(bytes) - n);
    };
    o.step_scalars = [this](int) { return wait_for_scalars(); };
    o.on_loss = [this](int, double loss, bool skipped) {
      std::lock_guard<std::mutex> lock(m_);
      loss_ = loss;
      skipped_ = skipped;
      have_loss_ = true;
      have_batch_ = false;
      cv_.notify_all();
    };
    AtenRunResult r = run_plan_aten(graph_, plan_, program_, initial_, o);
    std::lock_guard<std::mutex> lock(m_);
    final_ = std::move(r.final_state);
    result_ = std::move(r.run);
  } catch (...) {
    // Data-parallel: during the collectives the other ranks would wait for
    // this one forever (Note [Rank failures]).
    end_job_if_in_collectives(std::current_exception());
    std::lock_guard<std::mutex> lock(m_);
    error_ = std::current_exception();
  }
  std::lock_guard<std::mutex> lock(m_);
  done_ = true;
  cv_.notify_all();
}

bool AtenSession::wait_for_batch(int) {
  std::unique_lock<std::mutex> lock(m_);
  cv_.wait(lock, [&] { return have_batch_ || closing_; });
  return have_batch_;
}

std::vector<double> AtenSession::wait_for_scalars() {
  std::unique_lock<std::mutex> lock(m_);
  cv_.wait(lock, [&] { return have_scalars_ || !abandoned_.empty() || closing_; });
  if (!have_scalars_)
    throw Error(abandoned_.empty() ? "the session ended during a step" : abandoned_);
  have_scalars_ = false;
  return std::exchange(scalars_, {});
}

void AtenSession::rethrow_locked() {
  if (error_) std::rethrow_exception(error_);
}

void AtenSession::check_scalars(std::span<const double> scalars) const {
  if (!scalars.empty() && scalars.size() != program_.step_scalars.size())
    throw Error(fmt::format("step: {} step scalars for an exec file with {}", scalars.size(),
                            program_.step_scalars.size()));
}

double AtenSession::step(std::span<const BatchValue> batch, std::span<const double> scalars) {
  check_scalars(scalars);
  begin(batch);
  return end(scalars);
}

void AtenSession::begin(std::span<const BatchValue> batch) {
  // The batch is checked before the run sees it: a wrong one leaves the
  // session as it was.
  std::vector<uint8_t> given(graph_.tensors.size(), 0);
  for (const BatchValue& b : batch) {
    if (b.tensor < 0 || b.tensor >= graph_.num_tensors() ||
        graph_.tensors[b.tensor].kind != TensorKind::kInput)
      throw Error(
          fmt::format("step: tensor {} is not an input of graph '{}'", b.tensor, graph_.name));
    const Tensor& t = graph_.tensors[b.tensor];
    if (given[b.tensor]) throw Error(fmt::format("step: input '{}' given twice", t.name));
    if (static_cast<int64_t>(b.bytes.size()) > t.bytes)
      throw Error(fmt::format("step: input '{}' has {} bytes, the captured one {}", t.name,
                              b.bytes.size(), t.bytes));
    given[b.tensor] = 1;
  }
  for (TensorId t = 0; t < graph_.num_tensors(); ++t)
    if (graph_.tensors[t].kind == TensorKind::kInput && !given[t])
      throw Error(fmt::format("step: no value for input '{}'", graph_.tensors[t].name));

  std::unique_lock<std::mutex> lock(m_);
  if (in_step_) throw Error("step: begin() twice without end()");
  rethrow_locked();
  if (closing_ || done_) throw Error("step: the session is finished");
  for (const BatchValue& b : batch)
    batch_[b.tensor].assign(b.bytes.begin(), b.bytes.end());
  have_scalars_ = false;
  have_loss_ = false;
  have_batch_ = true;
  in_step_ = true;
  cv_.notify_all();
}

double AtenSession::end(std::span<const double> scalars) {
  try {
    check_scalars(scalars);
  } catch (const Error& e) {
    abandon(e.what());
    throw;
  }
  std::unique_lock<std::mutex> lock(m_);
  if (!in_step_) throw Error("step: end() without begin()");
  in_step_ = false;
  scalars_.assign(scalars.begin(), scalars.end());
  have_scalars_ = true;
  cv_.notify_all();
  cv_.wait(lock, [&] { return have_loss_ || done_; });
  rethrow_locked();
  if (!have_loss_) throw Error("step: the run ended before the step");
  ++steps_;
  return loss_;
}

void AtenSession::abandon(const std::string& why) {
  std::unique_lock<std::mutex> lock(m_);
  if (!in_step_) return;
  in_step_ = false;
  // The run ends: at the iteration's wait for its scalars (with this
  // error), or, when its ops take none, at its wait for the next batch.
  abandoned_ = why.empty() ? "step abandoned" : why;
  closing_ = true;
  cv_.notify_all();
  cv_.wait(lock, [&] { return done_; });
}

const ValuesFile& AtenSession::finish() {
  {
    std::lock_guard<std::mutex> lock(m_);
    closing_ = true;
    cv_.notify_all();
  }
  if (thread_.joinable()) thread_.join();
  std::lock_guard<std::mutex> lock(m_);
  rethrow_locked();
  return final_;
}

}  // namespace sa::runtime
