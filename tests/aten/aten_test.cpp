// The ATen kernel backend's torch-free parts (exec file, values file) and,
// when built with libtorch, its kernels: the committed captures in
// tests/data/capture run in program order give eager PyTorch's losses and
// final state (captured and recorded by swapadvisor-capture, see
// tests/data/capture/README.md).

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "graph/graph_io.h"
#include "runtime/aten/aten_kernels.h"
#include "runtime/aten/aten_program.h"
#include "runtime/aten/values_file.h"
#include "test_util.h"
#include "util/error.h"
#include "util/file_io.h"

namespace sa::runtime {
namespace {

using sa::testing::data_path;

std::string capture(const std::string& model, const std::string& what) {
  return data_path("capture/" + model + "." + what);
}

TEST(ValuesFile, RoundTrip) {
  ValuesFile v;
  v.graph = "g";
  for (int i = 0; i < 3; ++i) {
    TensorValue t;
    t.tensor = 10 - i;
    t.name = "t" + std::to_string(i);
    t.kind = "param";
    t.data.resize(static_cast<size_t>(1 + 70 * i));
    for (size_t b = 0; b < t.data.size(); ++b)
      t.data[b] = static_cast<std::byte>(b * 7 + i);
    v.tensors.push_back(t);
  }
  const std::string path = ::testing::TempDir() + "/values_roundtrip.bin";
  write_values_file(path, v);
  const ValuesFile r = read_values_file(path);
  EXPECT_EQ(r.graph, "g");
  ASSERT_EQ(r.tensors.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(r.tensors[i].tensor, v.tensors[i].tensor);
    EXPECT_EQ(r.tensors[i].name, v.tensors[i].name);
    EXPECT_EQ(r.tensors[i].data, v.tensors[i].data);
  }
  EXPECT_EQ(r.find(9)->name, "t1");
  EXPECT_EQ(r.find(3), nullptr);
}

TEST(ValuesFile, RejectsMalformed) {
  const std::string path = ::testing::TempDir() + "/values_bad.bin";
  write_file(path, "NOTVALUESxxxxxxxxxxxxxxxxxxxxx");
  EXPECT_THROW(read_values_file(path), Error);
  // A header claiming data past the end.
  std::string s = read_file(capture("tiny_mlp", "values.bin"));
  write_file(path, s.substr(0, s.size() - 100));
  try {
    read_values_file(path);
    FAIL() << "a truncated file was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("past the end"), std::string::npos) << e.what();
  }
}

TEST(ValuesFile, ReadsWhatPythonWrote) {
  const Graph g = read_graph(capture("tiny_cnn", "graph.json.gz"));
  const ValuesFile v = read_values_file(capture("tiny_cnn", "values.bin"));
  check_values_against(v, g, "tiny_cnn");
  int at_start = 0;
  for (const Tensor& t : g.tensors)
    at_start += exists_at_start(t.kind);
  EXPECT_EQ(static_cast<int>(v.tensors.size()), at_start);
  const TensorValue* w = nullptr;
  for (const TensorValue& t : v.tensors)
    if (t.name == "conv1.weight") w = &t;
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->data.size(), 8u * 3 * 3 * 3 * 4);
}

TEST(AtenProgram, ReadsAndChecksAgainstTheGraph) {
  const Graph g = read_graph(capture("tiny_cnn", "graph.json.gz"));
  const AtenProgram p = read_aten_program(capture("tiny_cnn", "exec.json.gz"), g);
  EXPECT_EQ(p.ops.size(), static_cast<size_t>(g.num_ops()));
  EXPECT_EQ(p.ops[0].name, g.ops[0].type);
  EXPECT_NE(p.loss_after_op, kNoOp);
  bool conv = false;
  for (const AtenOp& op : p.ops)
    conv |= op.qualname == "aten::convolution.default" && op.overload.empty();
  EXPECT_TRUE(conv);
  // Another graph is refused.
  const Graph other = read_graph(capture("tiny_mlp", "graph.json.gz"));
  EXPECT_THROW(read_aten_program(capture("tiny_cnn", "exec.json.gz"), other), Error);
}

TEST(AtenProgram, RejectsAViewOutsideItsTensor) {
  const Graph g = read_graph(capture("tiny_mlp", "graph.json.gz"));
  nlohmann::json doc = nlohmann::json::parse(read_file(capture("tiny_mlp", "exec.json.gz")));
  for (auto& op : doc["ops"])
    for (auto& a : op["args"])
      if (a.is_object() && a.contains("tensor")) {
        a["offset"] = 1 << 20;
        goto done;
      }
done:
  const std::string path = ::testing::TempDir() + "/bad.exec.json";
  write_file(path, doc.dump());
  try {
    read_aten_program(path, g);
    FAIL() << "a view past its tensor was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("past tensor"), std::string::npos) << e.what();
  }
}

// Program order on the CPU reproduces eager PyTorch: same losses, same state.
void expect_eager(const std::string& model) {
  if (!aten_available()) GTEST_SKIP() << "built without libtorch";
  const Graph g = read_graph(capture(model, "graph.json.gz"));
  const AtenProgram p = read_aten_program(capture(model, "exec.json.gz"), g);
  const ValuesFile init = read_values_file(capture(model, "values.bin"));
  // The committed captures and their eager runs are torch 1.13's (Debian 12);
  // another release's kernels may compute differently (Debian 13's 2.6
  // float32 convolution backward does: scripts/test-torch2).
  if (!same_torch_release(p.torch_version, aten_torch_version()))
    GTEST_SKIP() << model << " was captured with torch " << p.torch_version
                 << ", the kernels are libtorch " << aten_torch_version() << "'s";
  const ProgramOrderResult r = run_program_order(g, p, init, 3, {});
  const auto want = nlohmann::json::parse(read_file(capture(model, "eager3.json")))["losses"];
  ASSERT_EQ(r.losses.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_NEAR(r.losses[i], want[i].get<double>(), 1e-6 * std::abs(want[i].get<double>()))
        << model << " iteration " << i;
  const ValuesFile eager = read_values_file(capture(model, "eager3.values.bin"));
  int compared = 0;
  for (const TensorValue& e : eager.tensors) {
    const TensorValue* got = r.final_state.find(e.tensor);
    ASSERT_NE(got, nullptr) << e.name;
    if (g.tensors[e.tensor].dtype != "float32") {
      EXPECT_EQ(got->data, e.data) << e.name;
      continue;
    }
    ASSERT_EQ(got->data.size(), e.data.size()) << e.name;
    const size_t n = e.data.size() / 4;
    std::vector<float> a(n), b(n);
    std::memcpy(a.data(), got->data.data(), n * 4);
    std::memcpy(b.data(), e.data.data(), n * 4);
    float scale = 0, diff = 0;
    for (size_t k = 0; k < n; ++k) {
      scale = std::max(scale, std::abs(b[k]));
      diff = std::max(diff, std::abs(a[k] - b[k]));
    }
    EXPECT_LE(diff, 1e-5f * scale) << e.name;
    ++compared;
  }
  EXPECT_GT(compared, 0);
  EXPECT_EQ(r.stats.ops_run, 3 * g.num_ops());
  EXPECT_GT(r.stats.outputs_placed, 0);
}

TEST(AtenKernels, TinyMlpMatchesEager) {
  expect_eager("tiny_mlp");
}
TEST(AtenKernels, TinyCnnMatchesEager) {
  expect_eager("tiny_cnn");
}
// Random ops too: the kernels seed the generator as the capture and eager
// PyTorch do (Note [ATen recompute]).
TEST(AtenKernels, RandomOpsMatchEager) {
  expect_eager("random_ops");
}

TEST(AtenKernels, OutputsArePlacedNotCopied) {
  if (!aten_available()) GTEST_SKIP() << "built without libtorch";
  const Graph g = read_graph(capture("tiny_cnn", "graph.json.gz"));
  const AtenProgram p = read_aten_program(capture("tiny_cnn", "exec.json.gz"), g);
  const ValuesFile init = read_values_file(capture("tiny_cnn", "values.bin"));
  const ProgramOrderResult placed = run_program_order(g, p, init, 1, {});
  int outputs = 0;
  for (const Op& op : g.ops)
    outputs += static_cast<int>(op.outputs.size());
  EXPECT_EQ(placed.stats.outputs_placed + placed.stats.outputs_copied, outputs);
  EXPECT_GE(placed.stats.outputs_placed, outputs * 9 / 10)
      << "copied " << placed.stats.outputs_copied;
  // Without the placing allocator every output is copied, with the same result.
  AtenOptions copy;
  copy.place_outputs = false;
  const ProgramOrderResult copied = run_program_order(g, p, init, 1, copy);
  EXPECT_EQ(copied.stats.outputs_placed, 0);
  EXPECT_EQ(copied.stats.outputs_copied, outputs);
  EXPECT_EQ(copied.losses, placed.losses);
}

// The placing allocator gives an output's object to the first allocation of
// its size. var_mean returns two results of one size (16 bytes here): with
// the graph's outputs [1, 2] and the results mapped both ways, in one of the
// runs each result is allocated in the other's object (as torch 2.6's
// convolution_backward did with grad_input and grad_weight of one size, when
// a micro-batch made them so). Both must still read var and mean. Before the
// fix, copying the first result into its object overwrote the second.
TEST(AtenKernels, ResultsAllocatedInEachOthersObjectsArePlacedRight) {
  if (!aten_available()) GTEST_SKIP() << "built without libtorch";
  const Graph g = parse_graph(R"({"format": "swapadvisor-graph", "version": 1, "name": "vm",
    "tensors": [{"id": 0, "bytes": 128, "kind": "input", "name": "x", "dtype": "float64", "shape": [2, 8]},
                {"id": 1, "bytes": 64, "kind": "activation", "dtype": "float64", "shape": [2]},
                {"id": 2, "bytes": 64, "kind": "activation", "dtype": "float64", "shape": [2]}],
    "ops": [{"id": 0, "type": "aten::var_mean", "inputs": [0], "outputs": [1, 2], "updates": []}]})",
                              "vm.graph.json");
  ValuesFile init;
  init.graph = "vm";
  std::vector<double> x(16);
  for (int k = 0; k < 16; ++k)
    x[k] = (k * 7 % 5) + 0.25 * k;
  TensorValue xv{0, "x", "input", std::vector<std::byte>(128)};
  std::memcpy(xv.data.data(), x.data(), 128);
  init.tensors.push_back(xv);
  // var (unbiased) and mean of each row of x.
  double want[2][2];  // [row][0: var, 1: mean]
  for (int r = 0; r < 2; ++r) {
    double m = 0, v = 0;
    for (int k = 0; k < 8; ++k)
      m += x[r * 8 + k] / 8;
    for (int k = 0; k < 8; ++k)
      v += (x[r * 8 + k] - m) * (x[r * 8 + k] - m) / 7;
    want[r][0] = v;
    want[r][1] = m;
  }
  auto view = [](int t, int offset) {
    return nlohmann::json{{"tensor", t},
                          {"dtype", "float64"},
                          {"sizes", nlohmann::json::array()},
                          {"strides", nlohmann::json::array()},
                          {"offset", offset}};
  };
  for (const int var_tensor : {1, 2}) {
    const int mean_tensor = 3 - var_tensor;
    for (int r = 0; r < 2; ++r)
      for (const int what : {0, 1}) {
        nlohmann::json exec = {
            {"format", "swapadvisor-exec"},
            {"version", 1},
            {"graph", {{"name", "vm"}, {"ops", 1}, {"tensors", 3}}},
            {"tensors",
             {{{"id", 0}, {"storage_bytes", 128}},
              {{"id", 1}, {"storage_bytes", 16}},
              {{"id", 2}, {"storage_bytes", 16}}}},
            {"ops",
             {{{"id", 0},
               {"op", "aten::var_mean.dim"},
               {"args",
                {{{"tensor", 0},
                  {"dtype", "float64"},
                  {"sizes", {2, 8}},
                  {"strides", {8, 1}},
                  {"offset", 0}},
                 {1}}},
               {"kwargs", nlohmann::json::object()},
               {"results",
                {{{"tensor", var_tensor},
                  {"dtype", "float64"},
                  {"sizes", {2}},
                  {"strides", {1}},
                  {"offset", 0}},
                 {{"tensor", mean_tensor},
                  {"dtype", "float64"},
                  {"sizes", {2}},
                  {"strides", {1}},
                  {"offset", 0}}}}}}},
            {"loss", {{"after_op", 0}, {"value", view(what == 0 ? var_tensor : mean_tensor, r)}}}};
        const AtenProgram p = parse_aten_program(exec.dump(), "vm.exec.json", g);
        const ProgramOrderResult got = run_program_order(g, p, init, 1, {});
        ASSERT_EQ(got.losses.size(), 1u);
        EXPECT_DOUBLE_EQ(got.losses[0], want[r][what])
            << (what == 0 ? "var" : "mean") << " of row " << r << ", var in tensor " << var_tensor;
      }
  }
}

TEST(AtenKernels, UnknownOperatorIsAClearError) {
  if (!aten_available()) GTEST_SKIP() << "built without libtorch";
  const Graph g = read_graph(capture("tiny_mlp", "graph.json.gz"));
  AtenProgram p = read_aten_program(capture("tiny_mlp", "exec.json.gz"), g);
  p.ops[0].name = "aten::no_such_op";
  try {
    make_aten_kernels(g, p, {});
    FAIL() << "an unknown operator was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("aten::no_such_op"), std::string::npos) << e.what();
  }
}
TEST(AtenKernels, WithoutLibtorchSaysSo) {
  if (aten_available()) GTEST_SKIP() << "built with libtorch";
  const Graph g = read_graph(capture("tiny_mlp", "graph.json.gz"));
  const AtenProgram p = read_aten_program(capture("tiny_mlp", "exec.json.gz"), g);
  EXPECT_FALSE(aten_available());
  try {
    make_aten_kernels(g, p, {});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("libtorch"), std::string::npos);
  }
}

// A quick plan of a captured graph, written to the test's temp directory.
std::string plan_at_60_percent(const std::string& graph, const std::string& name) {
  const std::string plan = ::testing::TempDir() + "/" + name;
  const auto planned = sa::testing::run_cli(
      "plan " + graph + " --device v100-16gb --memory-fraction 0.6 --evaluations 20 -o " + plan);
  EXPECT_EQ(planned.exit_code, 0) << planned.err;
  return plan;
}

// The plugin (Note [ATen plugin]) missing where SA_ATEN_PLUGIN points is a
// clear error naming the path, not a crash or a silent fallback.
TEST(AtenPlugin, TorchReleasesCompareMajorAndMinor) {
  EXPECT_TRUE(same_torch_release("1.13.0a0+git6c9b55e", "1.13.0"));
  EXPECT_TRUE(same_torch_release("2.6.0+debian", "2.6.1"));
  EXPECT_FALSE(same_torch_release("1.13.0", "2.6.0"));
  EXPECT_FALSE(same_torch_release("2.1.0", "2.11.0"));
  EXPECT_FALSE(same_torch_release("", "2.6.0"));  // unknown: warn
}

TEST(AtenPlugin, AMissingPluginIsAClearError) {
  const std::string graph = capture("tiny_cnn", "graph.json.gz");
  const std::string plan = plan_at_60_percent(graph, "sa_aten_plugin_plan.json");
  setenv("SA_ATEN_PLUGIN", "/nonexistent/libswapadvisor_aten.so", 1);
  const auto r = sa::testing::run_cli("run " + graph + " " + plan + " --kernels aten");
  unsetenv("SA_ATEN_PLUGIN");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("/nonexistent/libswapadvisor_aten.so: not found"), std::string::npos)
      << r.err;
  std::remove(plan.c_str());
}

// `run --kernels aten --backend cuda`: where the plugin has CUDA and there is
// a GPU (scripts/gpu-check) it trains as the host backend does; elsewhere
// it is a clear error that says what is missing, not a crash.
TEST(AtenOnCuda, TrainsAsOnTheHostOrSaysWhyNot) {
  if (!aten_available()) GTEST_SKIP() << "built without libtorch";
  const std::string graph = capture("tiny_cnn", "graph.json.gz");
  const std::string plan = plan_at_60_percent(graph, "sa_aten_cuda_plan.json");
  const auto cuda = sa::testing::run_cli("run " + graph + " " + plan +
                                         " --kernels aten --iterations 2 --backend cuda --json");
  if (cuda.exit_code != 0) {
    EXPECT_EQ(cuda.exit_code, 1) << cuda.err;
    const bool says_why = cuda.err.find("without CUDA") != std::string::npos ||
                          cuda.err.find("CUDA device") != std::string::npos ||
                          cuda.err.find("without the CUDA toolkit") != std::string::npos;
    EXPECT_TRUE(says_why) << cuda.err;
    std::remove(plan.c_str());
    GTEST_SKIP() << "no ATen kernels on CUDA here: " << cuda.err;
  }
  const auto host =
      sa::testing::run_cli("run " + graph + " " + plan + " --kernels aten --iterations 2 --json");
  ASSERT_EQ(host.exit_code, 0) << host.err;
  const auto c = nlohmann::json::parse(cuda.out);
  const auto h = nlohmann::json::parse(host.out);
  ASSERT_EQ(c["losses"].size(), 2u);
  // cuDNN and cuBLAS reduce in other orders than the CPU's kernels.
  for (size_t i = 0; i < 2; ++i)
    EXPECT_NEAR(c["losses"][i].get<double>(), h["losses"][i].get<double>(),
                1e-3 * std::abs(h["losses"][i].get<double>()))
        << "iteration " << i;
  EXPECT_LE(c["peak_device_bytes"].get<int64_t>(), c["memory_budget_bytes"].get<int64_t>());
  EXPECT_EQ(c["aten"]["outputs_copied"].get<int64_t>(), 0) << cuda.out;
  std::remove(plan.c_str());
}

}  // namespace
}  // namespace sa::runtime
