// Reading and writing format v1 at scale: a synthetic, ResNet-like training
// graph of about 30,000 ops (issue 2: "reading a 30,000-op graph takes well
// under a second").
//
//   ninja -C build bench_graph_io && build/bench/bench_graph_io
//
// The graph is a chain of conv -> batch norm -> relu_ blocks in four stages
// (64..512 channels, 56x56..7x7, batch 32, FP32), the mirrored backward ops,
// and SGD with momentum as two in-place ops per parameter, like the captured
// graphs in tests/data/graphs. It is written once to a temporary .json and
// .json.gz, removed at exit.

#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "graph/graph_io.h"
#include "graph/validate.h"
#include "util/file_io.h"

namespace sa {
namespace {

constexpr int kBlocks = 2308;  // 13 ops each, plus the loss: 30,005 ops
constexpr int64_t kBatch = 32;
constexpr int64_t kFloat = 4;

Graph make_graph() {
  Graph g;
  g.name = fmt::format("synthetic-resnet-{}-blocks", kBlocks);
  g.source = "bench/bench_graph_io.cpp: synthetic conv/bn/relu chain with SGD momentum";
  auto tensor = [&](int64_t bytes, TensorKind kind, std::string name = "") {
    g.tensors.push_back({bytes, kind, std::move(name), {}, {}});
    return static_cast<TensorId>(g.num_tensors() - 1);
  };
  auto op = [&](std::string type, Phase phase, std::vector<TensorId> in, std::vector<TensorId> out,
                std::vector<TensorId> upd, double flops, double bytes) {
    Op o;
    o.type = std::move(type);
    o.phase = phase;
    o.inputs = std::move(in);
    o.outputs = std::move(out);
    o.updates = std::move(upd);
    o.flops = flops;
    o.bytes_accessed = bytes;
    g.ops.push_back(std::move(o));
  };
  auto bytes_of = [&](TensorId t) { return static_cast<double>(g.tensors[t].bytes); };

  struct Block {
    TensorId x, w, gamma, beta, rm, rv, a1, a2, mean, invstd;
    int64_t cin, cout, hw, k;
  };
  std::vector<Block> blocks;
  TensorId x = tensor(kBatch * 3 * 224 * 224 * kFloat, TensorKind::kInput, "data");
  const TensorId labels = tensor(kBatch * 8, TensorKind::kInput, "labels");
  int64_t cin = 3;
  for (int b = 0; b < kBlocks; ++b) {
    const int stage = b * 4 / kBlocks;
    const int64_t width = int64_t{64} << stage;
    const int64_t hw = 56 >> stage;
    const int64_t cout = b % 3 == 2 ? 4 * width : width;  // bottleneck: 1x1, 3x3, 1x1 (x4)
    const int64_t k = b % 3 == 1 ? 3 : 1;
    const std::string p = fmt::format("layer{}.{}", stage + 1, b);
    Block bl{};
    bl.x = x;
    bl.cin = cin;
    bl.cout = cout;
    bl.hw = hw;
    bl.k = k;
    bl.w = tensor(cout * cin * k * k * kFloat, TensorKind::kParam, p + ".conv.weight");
    bl.gamma = tensor(cout * kFloat, TensorKind::kParam, p + ".bn.weight");
    bl.beta = tensor(cout * kFloat, TensorKind::kParam, p + ".bn.bias");
    bl.rm = tensor(cout * kFloat, TensorKind::kBuffer, p + ".bn.running_mean");
    bl.rv = tensor(cout * kFloat, TensorKind::kBuffer, p + ".bn.running_var");
    const TensorId nbt = tensor(8, TensorKind::kBuffer, p + ".bn.num_batches_tracked");
    const int64_t act = kBatch * cout * hw * hw * kFloat;
    const double conv_flops = 2.0 * kBatch * cout * hw * hw * cin * k * k;
    bl.a1 = tensor(act, TensorKind::kActivation);
    op("aten::convolution", Phase::kForward, {x, bl.w}, {bl.a1}, {}, conv_flops,
       bytes_of(x) + bytes_of(bl.w) + act);
    op("aten::add_", Phase::kForward, {}, {}, {nbt}, 1, 16);
    bl.a2 = tensor(act, TensorKind::kActivation);
    bl.mean = tensor(cout * kFloat, TensorKind::kActivation);
    bl.invstd = tensor(cout * kFloat, TensorKind::kActivation);
    op("aten::native_batch_norm", Phase::kForward, {bl.a1, bl.gamma, bl.beta, bl.rm, bl.rv},
       {bl.a2, bl.mean, bl.invstd}, {}, 8.0 * act / kFloat, 2.0 * act);
    op("aten::relu_", Phase::kForward, {}, {}, {bl.a2}, act / kFloat, 2.0 * act);
    blocks.push_back(bl);
    x = bl.a2;
    cin = cout;
  }
  TensorId grad = tensor(g.tensors[x].bytes, TensorKind::kGradient);
  op("loss_bwd", Phase::kBackward, {x, labels}, {grad}, {}, 3.0 * bytes_of(x) / kFloat,
     2.0 * bytes_of(x));
  struct ParamGrad {
    TensorId param, grad;
  };
  std::vector<ParamGrad> param_grads;
  for (int b = kBlocks - 1; b >= 0; --b) {
    const Block& bl = blocks[b];
    const double act = bytes_of(bl.a1);
    const TensorId g_relu = tensor(g.tensors[bl.a2].bytes, TensorKind::kGradient);
    op("aten::threshold_backward", Phase::kBackward, {grad, bl.a2}, {g_relu}, {}, act / kFloat,
       3.0 * act);
    const TensorId g_a1 = tensor(g.tensors[bl.a1].bytes, TensorKind::kGradient);
    const TensorId g_gamma = tensor(g.tensors[bl.gamma].bytes, TensorKind::kGradient);
    const TensorId g_beta = tensor(g.tensors[bl.beta].bytes, TensorKind::kGradient);
    op("aten::native_batch_norm_backward", Phase::kBackward,
       {g_relu, bl.a1, bl.gamma, bl.mean, bl.invstd}, {g_a1, g_gamma, g_beta}, {},
       12.0 * act / kFloat, 3.0 * act);
    const TensorId g_w = tensor(g.tensors[bl.w].bytes, TensorKind::kGradient);
    const double conv_flops = 2.0 * kBatch * bl.cout * bl.hw * bl.hw * bl.cin * bl.k * bl.k;
    std::vector<TensorId> outs = {g_w};
    if (b > 0) outs.insert(outs.begin(), tensor(g.tensors[bl.x].bytes, TensorKind::kGradient));
    op("aten::convolution_backward", Phase::kBackward, {g_a1, bl.x, bl.w}, outs, {}, 2 * conv_flops,
       act + 2 * bytes_of(bl.x) + 2 * bytes_of(bl.w));
    param_grads.push_back({bl.w, g_w});
    param_grads.push_back({bl.gamma, g_gamma});
    param_grads.push_back({bl.beta, g_beta});
    grad = b > 0 ? outs.front() : grad;
  }
  for (const auto& [param, pgrad] : param_grads) {
    const TensorId momentum = tensor(g.tensors[param].bytes, TensorKind::kOptimizerState,
                                     g.tensors[param].name + ".momentum_buffer");
    const double n = bytes_of(param) / kFloat;
    op("aten::add_", Phase::kUpdate, {pgrad}, {}, {momentum}, 2 * n, 3 * n * kFloat);
    op("aten::add_", Phase::kUpdate, {momentum}, {}, {param}, 2 * n, 3 * n * kFloat);
  }
  validate_graph(g, g.name);
  return g;
}

struct Fixture {
  Graph graph = make_graph();
  std::string text = graph_to_json(graph);
  std::string json_path = temp("json");
  std::string gz_path = temp("json.gz");

  Fixture() {
    write_graph(graph, json_path);
    write_graph(graph, gz_path);
  }
  ~Fixture() {
    std::filesystem::remove(json_path);
    std::filesystem::remove(gz_path);
  }
  static std::string temp(const char* ext) {
    return (std::filesystem::temp_directory_path() /
            fmt::format("sa_bench_graph_io_{}.{}", getpid(), ext))
        .string();
  }
};

const Fixture& fixture() {
  static Fixture f;
  return f;
}

void report(benchmark::State& state, int64_t bytes) {
  const Graph& g = fixture().graph;
  state.counters["ops"] = g.num_ops();
  state.counters["tensors"] = g.num_tensors();
  state.counters["file_MB"] = static_cast<double>(bytes) / 1e6;
  state.SetBytesProcessed(state.iterations() * bytes);
  state.SetItemsProcessed(state.iterations() * g.num_ops());
}

void BM_ReadGraphJson(benchmark::State& state) {
  const Fixture& f = fixture();
  for (auto _ : state)
    benchmark::DoNotOptimize(read_graph(f.json_path));
  report(state, static_cast<int64_t>(std::filesystem::file_size(f.json_path)));
}
BENCHMARK(BM_ReadGraphJson)->Unit(benchmark::kMillisecond);

void BM_ReadGraphJsonGz(benchmark::State& state) {
  const Fixture& f = fixture();
  for (auto _ : state)
    benchmark::DoNotOptimize(read_graph(f.gz_path));
  report(state, static_cast<int64_t>(std::filesystem::file_size(f.gz_path)));
}
BENCHMARK(BM_ReadGraphJsonGz)->Unit(benchmark::kMillisecond);

// The gunzip alone, to split the .json.gz time.
void BM_ReadFileGunzip(benchmark::State& state) {
  const Fixture& f = fixture();
  for (auto _ : state)
    benchmark::DoNotOptimize(read_file(f.gz_path));
  report(state, static_cast<int64_t>(std::filesystem::file_size(f.gz_path)));
}
BENCHMARK(BM_ReadFileGunzip)->Unit(benchmark::kMillisecond);

// Parsing text already in memory: JSON, reading the fields, validation.
void BM_ParseGraph(benchmark::State& state) {
  const Fixture& f = fixture();
  for (auto _ : state)
    benchmark::DoNotOptimize(parse_graph(f.text, "bench"));
  report(state, static_cast<int64_t>(f.text.size()));
}
BENCHMARK(BM_ParseGraph)->Unit(benchmark::kMillisecond);

// Baseline: nlohmann's own DOM parser on the same text, which the reader's
// parser (graph_io.cpp: DomBuilder) replaces to catch duplicate keys and to
// name the JSON path of a syntax error.
void BM_NlohmannParseOnly(benchmark::State& state) {
  const Fixture& f = fixture();
  for (auto _ : state)
    benchmark::DoNotOptimize(nlohmann::json::parse(f.text));
  report(state, static_cast<int64_t>(f.text.size()));
}
BENCHMARK(BM_NlohmannParseOnly)->Unit(benchmark::kMillisecond);

// The semantic checks alone.
void BM_ValidateGraph(benchmark::State& state) {
  const Fixture& f = fixture();
  for (auto _ : state)
    validate_graph(f.graph, "bench");
  report(state, static_cast<int64_t>(f.text.size()));
}
BENCHMARK(BM_ValidateGraph)->Unit(benchmark::kMillisecond);

void BM_GraphToJson(benchmark::State& state) {
  const Fixture& f = fixture();
  for (auto _ : state)
    benchmark::DoNotOptimize(graph_to_json(f.graph));
  report(state, static_cast<int64_t>(f.text.size()));
}
BENCHMARK(BM_GraphToJson)->Unit(benchmark::kMillisecond);

void BM_WriteGraphJsonGz(benchmark::State& state) {
  const Fixture& f = fixture();
  const std::string path = Fixture::temp("out.json.gz");
  for (auto _ : state)
    write_graph(f.graph, path);
  report(state, static_cast<int64_t>(std::filesystem::file_size(path)));
  std::filesystem::remove(path);
}
BENCHMARK(BM_WriteGraphJsonGz)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace sa
