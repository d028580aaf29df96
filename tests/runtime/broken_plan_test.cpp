// Plans broken on purpose, run with the verifier bypassed: the integrity
// check names the op and tensor that went wrong. (Each plan is also shown to
// fail verify_plan, which `swapadvisor run` applies first.)

#include <gtest/gtest.h>

#include "plan/verify.h"
#include "runtime/executor.h"
#include "runtime/host/host_backend.h"
#include "runtime_test_util.h"

namespace sa::runtime {
namespace {

using testing::find_step;
using testing::remove_wait;
using testing::swap_chain;

RunResult run_broken(const testing::SwapChain& s, bool safety_net = true) {
  HostBackendOptions o;
  o.link = s.link;
  o.pace = true;
  auto b = make_host_backend(o);
  RunOptions ro;
  ro.iterations = 2;
  ro.safety_net = safety_net;
  return run_plan(*b, s.g, s.plan, s.op_us, ro);
}

// op5 reads a from the object e holds.
TEST(RuntimeBrokenPlan, WrongObjectIsCaught) {
  auto s = swap_chain(64 << 10, 20, 1);
  auto objs = s.plan.objects_of(5);  // x (output), a, e (inputs)
  const ObjectId e_obj = objs[2];
  s.plan.access_objects[s.plan.access_begin[5] + 1] = e_obj;
  EXPECT_FALSE(verify_plan(s.g, s.plan).ok);
  const RunResult r = run_broken(s);
  EXPECT_FALSE(r.integrity_ok);
  EXPECT_NE(r.integrity.find("iteration 1: op 5 'op5' (test::n) created tensor 5 'x'"),
            std::string::npos)
      << r.integrity;
}

// a is dropped instead of swapped out, so its swap-in brings back whatever
// its host buffer held.
TEST(RuntimeBrokenPlan, LostSwapOutIsCaught) {
  auto s = swap_chain(64 << 10, 20, 1);
  const StepId out = find_step(s.plan, StepKind::kSwapOut, 0);
  ASSERT_GE(out, 0);
  s.plan.steps[out].kind = StepKind::kDrop;
  EXPECT_FALSE(verify_plan(s.g, s.plan).ok);
  const RunResult r = run_broken(s);
  EXPECT_FALSE(r.integrity_ok);
  EXPECT_NE(r.integrity.find("op 5 'op5' (test::n) created tensor 5 'x'"), std::string::npos)
      << r.integrity;
}

#ifndef SA_UNDER_TSAN
// op5 no longer waits for the swap-in of a (1 MiB at 0.1 GB/s, 10 ms): it
// reads the object while the copy has barely begun. (A data race by design,
// so not run under ThreadSanitizer.)
TEST(RuntimeBrokenPlan, RemovedWaitIsCaught) {
  auto s = swap_chain(1 << 20, 20, 0.1);
  const StepId in = find_step(s.plan, StepKind::kSwapIn, 0);
  const StepId c5 = find_step(s.plan, StepKind::kCompute, 5);
  ASSERT_GE(in, 0);
  ASSERT_GE(c5, 0);
  remove_wait(s.plan, c5, in);
  EXPECT_FALSE(verify_plan(s.g, s.plan).ok);
  const RunResult r = run_broken(s);
  EXPECT_FALSE(r.integrity_ok);
  EXPECT_NE(r.integrity.find("iteration 1: op 5 'op5' (test::n) created tensor 5 'x'"),
            std::string::npos)
      << r.integrity;
}

// Without the safety net, a swap-in that no longer waits for the last reader
// of its object's previous tenant runs early: a lands in object 0 before op3
// creates d there, so op5 reads d where a should be.
TEST(RuntimeBrokenPlan, ReuseRaceIsCaughtWithoutTheSafetyNet) {
  auto s = swap_chain(1 << 20, 2000, 4);
  const StepId in = find_step(s.plan, StepKind::kSwapIn, 0);
  const StepId c4 = find_step(s.plan, StepKind::kCompute, 4);
  remove_wait(s.plan, in, c4);
  const RunResult r = run_broken(s, /*safety_net=*/false);
  EXPECT_FALSE(r.integrity_ok);
  // Usually op5 reads d where a should be; on a loaded machine the early copy
  // can land while op4 still reads the object, and op4 is the first to differ.
  const bool op5 = r.integrity.find("iteration 1: op 5 'op5' (test::n) created tensor 5 'x'") !=
                   std::string::npos;
  const bool op4 = r.integrity.find("iteration 1: op 4 'op4' (test::m) created tensor 4 'e'") !=
                   std::string::npos;
  EXPECT_TRUE(op5 || op4) << r.integrity;
}
#endif

}  // namespace
}  // namespace sa::runtime
