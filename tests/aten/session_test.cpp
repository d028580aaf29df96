// AtenSession (Note [Training session] in runtime/aten/aten_session.h): a run
// kept going between steps, each on the batch it is given, trains as
// run_plan_aten does with that batch at every iteration.

#include <chrono>
#include <cmath>
#include <cstring>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "cost/device.h"
#include "graph/graph_io.h"
#include "graph/stats.h"
#include "methods/methods.h"
#include "plan/verify.h"
#include "runtime/aten/aten_kernels.h"
#include "runtime/aten/aten_program.h"
#include "runtime/aten/aten_run.h"
#include "runtime/aten/aten_session.h"
#include "runtime/aten/values_file.h"
#include "test_util.h"
#include "util/error.h"

namespace sa::runtime {
namespace {

struct Captured {
  Graph g;
  AtenProgram program;
  ValuesFile init;
  Plan plan;
};

// tiny_mlp planned at half its peak by `method` (a plan that swaps).
Captured tiny_mlp(const std::string& method) {
  Captured c;
  c.g = read_graph(sa::testing::data_path("capture/tiny_mlp.graph.json.gz"));
  c.program = read_aten_program(sa::testing::data_path("capture/tiny_mlp.exec.json.gz"), c.g);
  c.init = read_values_file(sa::testing::data_path("capture/tiny_mlp.values.bin"));
  const DeviceProfile device = load_device("v100-16gb");
  const Problem problem(c.g, device, peak_live_bytes(c.g) / 2);
  MethodOptions o;
  o.search.max_evaluations = 20;
  o.search.threads = 1;
  const MethodResult r = run_method(method, problem, o);
  EXPECT_TRUE(r.feasible) << r.why;
  c.plan = r.plan;
  EXPECT_TRUE(verify_plan(c.g, c.plan).ok);
  return c;
}

std::vector<TensorId> inputs(const Graph& g) {
  std::vector<TensorId> v;
  for (TensorId t = 0; t < g.num_tensors(); ++t)
    if (g.tensors[t].kind == TensorKind::kInput) v.push_back(t);
  return v;
}

// The captured batch, its float32 inputs scaled by `scale` (a batch of
// another step; the integer targets as captured).
std::vector<std::vector<std::byte>> batch(const Captured& c, float scale) {
  std::vector<std::vector<std::byte>> out;
  for (TensorId t : inputs(c.g)) {
    std::vector<std::byte> bytes = c.init.find(t)->data;
    if (c.g.tensors[t].dtype == "float32") {
      std::vector<float> f(bytes.size() / 4);
      std::memcpy(f.data(), bytes.data(), f.size() * 4);
      for (float& x : f)
        x *= scale;
      std::memcpy(bytes.data(), f.data(), f.size() * 4);
    }
    out.push_back(std::move(bytes));
  }
  return out;
}

double step(AtenSession& s, const Captured& c, const std::vector<std::vector<std::byte>>& b) {
  std::vector<BatchValue> v;
  const std::vector<TensorId> in = inputs(c.g);
  for (size_t i = 0; i < in.size(); ++i)
    v.push_back({in[i], b[i]});
  return s.step(v);
}

// The same plan run by run_plan_aten with `values` (initial state and batch)
// for one iteration: the loss and the state after it.
AtenRunResult one_iteration(const Captured& c, const ValuesFile& values) {
  AtenRunOptions o;
  o.iterations = 1;
  return run_plan_aten(c.g, c.plan, c.program, values, o);
}

ValuesFile with_batch(const Captured& c, ValuesFile state,
                      const std::vector<std::vector<std::byte>>& b) {
  const std::vector<TensorId> in = inputs(c.g);
  for (size_t i = 0; i < in.size(); ++i) {
    TensorValue v;
    v.tensor = in[i];
    v.name = c.g.tensors[in[i]].name;
    v.kind = "input";
    v.data = b[i];
    state.tensors.push_back(std::move(v));
  }
  return state;
}

class AtenSessionTest : public ::testing::TestWithParam<const char*> {};

// Three steps on three batches equal three one-iteration runs, each started
// from the state the previous one ended with: the losses and the final state
// byte for byte.
TEST_P(AtenSessionTest, StepsTrainAsRunsOnEachBatch) {
  if (!aten_available()) GTEST_SKIP() << "built without libtorch";
  const Captured c = tiny_mlp(GetParam());
  AtenSession s(c.g, c.plan, c.program, c.init, {});
  ValuesFile state = c.init;
  std::erase_if(state.tensors, [&](const TensorValue& v) {
    return c.g.tensors[v.tensor].kind == TensorKind::kInput;
  });
  for (const float scale : {1.0f, 0.5f, -2.0f}) {
    const auto b = batch(c, scale);
    const double loss = step(s, c, b);
    const AtenRunResult want = one_iteration(c, with_batch(c, state, b));
    ASSERT_EQ(want.losses.size(), 1u);
    EXPECT_EQ(loss, want.losses[0]) << "batch scaled by " << scale;
    state = want.final_state;
  }
  EXPECT_EQ(s.steps(), 3);
  const ValuesFile& got = s.finish();
  ASSERT_EQ(got.tensors.size(), state.tensors.size());
  for (const TensorValue& v : state.tensors) {
    const TensorValue* g = got.find(v.tensor);
    ASSERT_NE(g, nullptr) << v.name;
    EXPECT_EQ(g->data, v.data) << v.name;
  }
  EXPECT_EQ(s.result().iteration_wall_us.size(), 3u);
}

INSTANTIATE_TEST_SUITE_P(Methods, AtenSessionTest, ::testing::Values("swapadvisor", "odswap"));

TEST(AtenSession, AWrongBatchIsAClearErrorAndTheSessionGoesOn) {
  if (!aten_available()) GTEST_SKIP() << "built without libtorch";
  const Captured c = tiny_mlp("odswap");
  AtenSession s(c.g, c.plan, c.program, c.init, {});
  const std::vector<TensorId> in = inputs(c.g);
  const auto b = batch(c, 1);
  std::vector<std::byte> big(b[0].size() + 64);
  const std::vector<BatchValue> too_big = {{in[0], big}};
  EXPECT_NE(sa::testing::error_of([&] { s.step(too_big); }).find("bytes, the captured one"),
            std::string::npos);
  const std::vector<BatchValue> missing = {{in[0], b[0]}};
  EXPECT_NE(sa::testing::error_of([&] { s.step(missing); }).find("no value for input"),
            std::string::npos);
  const std::vector<BatchValue> not_input = {{0, b[0]}};
  if (c.g.tensors[0].kind != TensorKind::kInput) {
    EXPECT_NE(sa::testing::error_of([&] { s.step(not_input); }).find("is not an input"),
              std::string::npos);
  }
  EXPECT_TRUE(std::isfinite(step(s, c, b)));
  s.finish();
  EXPECT_NE(sa::testing::error_of([&] { step(s, c, b); }).find("finished"), std::string::npos);
}

// A session that is never stepped ends cleanly, with the initial state.
TEST(AtenSession, FinishedBeforeAStepKeepsTheInitialState) {
  if (!aten_available()) GTEST_SKIP() << "built without libtorch";
  const Captured c = tiny_mlp("odswap");
  AtenSession s(c.g, c.plan, c.program, c.init, {});
  const ValuesFile& got = s.finish();
  for (const TensorValue& v : got.tensors)
    EXPECT_EQ(v.data, c.init.find(v.tensor)->data) << v.name;
  EXPECT_EQ(s.steps(), 0);
}

// Note [Step scalars]: tiny_mlp's SGD steps (ops 20, 23, 26, 29:
// add_(param, momentum_buffer, alpha=-lr)) with their alpha as a step
// scalar. A step given -0.01 (the captured lr) trains as the file does; one
// given 0 leaves every parameter as it was (the momentum buffers still
// move); a wrong count is an error that leaves the session usable.
TEST(AtenSession, StepScalarsAreTheStepsValues) {
  if (!aten_available()) GTEST_SKIP() << "built without libtorch";
  Captured c = tiny_mlp("odswap");
  const Captured plain = c;
  c.program.step_scalars = {-0.01};
  for (const OpId o : {20, 23, 26, 29}) {
    ASSERT_EQ(c.program.ops[o].kwargs.at("alpha").get<double>(), -0.01) << o;
    c.program.ops[o].step_scalars = {{-1, "alpha", 0}};
  }
  const auto b = batch(c, 1);
  AtenSession tagged(c.g, c.plan, c.program, c.init, {});
  AtenSession untagged(plain.g, plain.plan, plain.program, plain.init, {});
  const std::vector<double> lr = {-0.01}, none = {0.0}, two = {1.0, 2.0};
  std::vector<BatchValue> v;
  const std::vector<TensorId> in = inputs(c.g);
  for (size_t i = 0; i < in.size(); ++i)
    v.push_back({in[i], b[i]});
  EXPECT_EQ(tagged.step(v, lr), untagged.step(v));
  EXPECT_NE(sa::testing::error_of([&] { tagged.step(v, two); }).find("2 step scalars"),
            std::string::npos);
  const ValuesFile before = [&] {
    AtenSession s(c.g, c.plan, c.program, c.init, {});
    s.step(v, lr);
    return s.finish();
  }();
  AtenSession frozen(c.g, c.plan, c.program, c.init, {});
  frozen.step(v, lr);
  frozen.step(v, none);
  const ValuesFile& after = frozen.finish();
  int params = 0, moved = 0;
  for (const TensorValue& t : before.tensors) {
    const TensorKind kind = c.g.tensors[t.tensor].kind;
    if (kind == TensorKind::kParam) {
      ++params;
      EXPECT_EQ(after.find(t.tensor)->data, t.data) << t.name << " moved with lr 0";
    } else if (kind == TensorKind::kOptimizerState) {
      moved += after.find(t.tensor)->data != t.data;
    }
  }
  EXPECT_EQ(params, 4);
  EXPECT_EQ(moved, 4) << "the momentum buffers take the gradient whatever the lr";
}

// begin() and end(): the iteration runs its forward and backward passes on
// begin()'s batch and waits for end()'s scalars before the optimizer's first
// op, so that a step's values given late are that step's (lr 0 after a
// pause: no parameter moves). abandon() ends the run with its reason; end()
// with a wrong count abandons too.
TEST(AtenSession, BeginAndEndTakeTheStepsScalarsLate) {
  if (!aten_available()) GTEST_SKIP() << "built without libtorch";
  Captured c = tiny_mlp("odswap");
  c.program.step_scalars = {-0.01};
  for (const OpId o : {20, 23, 26, 29})
    c.program.ops[o].step_scalars = {{-1, "alpha", 0}};
  const auto b = batch(c, 1);
  std::vector<BatchValue> v;
  const std::vector<TensorId> in = inputs(c.g);
  for (size_t i = 0; i < in.size(); ++i)
    v.push_back({in[i], b[i]});
  const std::vector<double> lr = {-0.01}, none = {0.0};

  AtenSession whole(c.g, c.plan, c.program, c.init, {});
  AtenSession halves(c.g, c.plan, c.program, c.init, {});
  EXPECT_EQ(whole.step(v, lr), (halves.begin(v), halves.end(lr)));
  EXPECT_EQ(whole.step(v, lr), (halves.begin(v), halves.end(lr)));
  halves.begin(v);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the iteration waits
  halves.end(none);
  const ValuesFile& a = whole.finish();
  const ValuesFile& h = halves.finish();
  for (const TensorValue& t : a.tensors) {
    if (c.g.tensors[t.tensor].kind == TensorKind::kParam) {
      EXPECT_EQ(h.find(t.tensor)->data, t.data) << t.name << " moved with lr 0";
    }
  }

  AtenSession s(c.g, c.plan, c.program, c.init, {});
  EXPECT_NE(sa::testing::error_of([&] { s.end(lr); }).find("without begin"), std::string::npos);
  s.begin(v);
  EXPECT_NE(sa::testing::error_of([&] { s.begin(v); }).find("twice"), std::string::npos);
  s.abandon("the shadow optimizer failed");
  EXPECT_NE(sa::testing::error_of([&] { s.step(v, lr); }).find("the shadow optimizer failed"),
            std::string::npos);
  EXPECT_NE(sa::testing::error_of([&] { s.finish(); }).find("the shadow optimizer failed"),
            std::string::npos);

  AtenSession wrong(c.g, c.plan, c.program, c.init, {});
  wrong.begin(v);
  EXPECT_NE(sa::testing::error_of([&] {
              wrong.end(std::vector<double>{1.0, 2.0});
            }).find("2 step scalars"),
            std::string::npos);
  EXPECT_NE(sa::testing::error_of([&] { wrong.finish(); }).find("2 step scalars"),
            std::string::npos);
}

}  // namespace
}  // namespace sa::runtime
