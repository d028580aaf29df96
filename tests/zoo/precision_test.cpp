// Mixed-precision zoo graphs (Note [Mixed precision] in zoo/builder.h),
// checked by hand on mlp-1 at batch 4 with SGD (its FP32 count is in
// builder_test.cpp, HandCheckedMlp).

#include <algorithm>
#include <cstdio>

#include <gtest/gtest.h>

#include "graph/dataflow.h"
#include "graph/graph_io.h"
#include "graph/stats.h"
#include "graph/validate.h"
#include "test_util.h"
#include "zoo_test_util.h"

namespace sa {
namespace {

Graph mlp(const std::string& precision) {
  ZooOptions o;
  o.model = "mlp-1";
  o.batch = 4;
  o.precision = precision;
  return build_zoo_model(o);
}

int count_type(const Graph& g, const std::string& type) {
  int n = 0;
  for (const Op& op : g.ops)
    n += op.type == type;
  return n;
}

// BF16: data [4,64] fp32 is cast to bf16, each param gets a bf16 copy
// (aten::_to_copy), the GEMMs run in bf16; params, momentum and param
// gradients stay fp32; the log-softmax and loss are fp32.
//
// Persistent: as in FP32, 1056 + 2 * 19240 = 39536 (the master copies).
//
// Ops and the transients each creates (bytes; lifetime creator..last access):
//   0 _to_copy data     data16 512 (0..17)
//   1 _to_copy l0.w     w0_16 8192 (1..17)       2 _to_copy l0.b  b0_16 128 (2..3)
//   3 addmm             y0 512 (3..16)           4 relu_
//   5 _to_copy head.w   wh16 1280 (5..13)        6 _to_copy head.b bh16 20 (6..7)
//   7 addmm             logits 80 (7..8)
//   8 _log_softmax      logp 160 fp32 (8..12)    9 nll_loss  loss 4 (9..10), tw 4 (9..11)
//  10 ones_like gloss 4 (10..11)  11 nll_bw glogp 160 (11..12)  12 lsm_bw glogits 80 (12..13)
//  13 linear_bw head    gy0 512 (13..16), gwh16 1280 (13..15), gbh16 20 (13..14)
//  14 _to_copy bw       head.bias.grad 40 fp32 (14..23)
//  15 _to_copy bw       head.weight.grad 2560 fp32 (15..22)
//  16 threshold_bw      gz0 512 (16..17)
//  17 linear_bw l0      gw0_16 8192 (17..19), gb0_16 128 (17..18) (none for data)
//  18 _to_copy bw       layers.0.bias.grad 256 (18..21)
//  19 _to_copy bw       layers.0.weight.grad 16384 (19..20)
//  20-23 sgd_mom_update
// Live transients peak at op 19: 8192 + 16384 + 256 + 40 + 2560 = 27432, so
// peak live = 39536 + 27432 = 66968: more than FP32's 59800, since at this
// batch the weight copies and the FP32 gradients outweigh the halved
// activations.
TEST(ZooPrecision, HandCheckedBf16Mlp) {
  const Graph g = mlp("bf16");
  EXPECT_NO_THROW(validate_graph(g, "mlp"));
  EXPECT_EQ(g.name, "mlp-1-b4-bf16");
  ASSERT_EQ(g.num_ops(), 24);
  EXPECT_EQ(count_type(g, "aten::_to_copy"), 1 + 4 + 4);
  EXPECT_EQ(persistent_bytes(g), 39536);
  EXPECT_EQ(peak_live_bytes(g), 66968);
  const auto profile = live_bytes_profile(g, program_order(g.num_ops()));
  EXPECT_EQ(std::max_element(profile.begin(), profile.end()) - profile.begin(), 19);
  // The first GEMM reads bf16 copies: data 512 + weight 8192 + bias 128, writes 512.
  EXPECT_EQ(g.ops[3].type, "aten::addmm");
  EXPECT_EQ(g.ops[3].math, MathType::kBf16);
  EXPECT_EQ(*g.ops[3].bytes_accessed, 512 + 8192 + 128 + 512);
  EXPECT_EQ(g.ops[8].math, MathType::kBf16);   // reads bf16 logits, writes fp32
  EXPECT_EQ(g.ops[11].math, MathType::kFp32);  // the loss's backward is fp32 alone
  EXPECT_EQ(g.ops[20].type, "sgd_mom_update");
  EXPECT_EQ(g.ops[20].math, MathType::kFp32);  // master weights
  EXPECT_EQ(g.tensors[g.ops[19].outputs[0]].name, "layers.0.weight.grad");
  EXPECT_EQ(g.tensors[g.ops[19].outputs[0]].dtype, "float32");
  EXPECT_EQ(g.tensors[g.ops[0].outputs[0]].dtype, "bfloat16");
}

// FP16 adds GradScaler's ops: the loss times the scale (a 4-byte buffer,
// with an 8-byte growth tracker) before the backward, then after it the
// inverse scale and found_inf, one unscale per param gradient, and the scale
// update after the optimizer step.
TEST(ZooPrecision, Fp16AddsLossScaling) {
  const Graph g = mlp("fp16");
  EXPECT_NO_THROW(validate_graph(g, "mlp"));
  EXPECT_EQ(g.name, "mlp-1-b4-fp16");
  EXPECT_EQ(persistent_bytes(g), 39536 + 4 + 8);
  EXPECT_EQ(count_type(g, "aten::_amp_foreach_non_finite_check_and_unscale_"), 4);
  EXPECT_EQ(count_type(g, "aten::_amp_update_scale_"), 1);
  EXPECT_EQ(g.ops.back().type, "aten::_amp_update_scale_");
  EXPECT_EQ(g.ops[3].math, MathType::kFp16);
  // 2 more ops than BF16 before the backward (scale_loss and its backward),
  // then reciprocal, zeros, 4 unscales and the scale update.
  EXPECT_EQ(g.num_ops(), 24 + 2 + 2 + 4 + 1);
}

TEST(ZooPrecision, Fp32IsUnchangedAndBadPrecisionIsAnError) {
  const Graph g = mlp("fp32");
  EXPECT_EQ(peak_live_bytes(g), 59800);
  for (const Op& op : g.ops)
    EXPECT_EQ(op.math, MathType::kFp32);
  EXPECT_EQ(testing::error_of([] { mlp("fp8"); }),
            "unknown precision 'fp8' (use fp32, bf16 or fp16)");
}

// The zoo's BF16 ResNets against the same models captured from PyTorch 1.13
// under CPU autocast (tests/data/amp/, docs/zoo.md "Mixed precision"): peak
// live bytes within 0.01% (captures round every tensor up to 64 bytes),
// persistent bytes within 64 once the captures' num_batches_tracked
// counters (which the zoo leaves out) are set aside, flops within 1%.
TEST(ZooPrecision, Bf16ResNetsMatchAutocastCaptures) {
  struct Capture {
    const char* file;
    const char* model;
    int batch;
  };
  for (const Capture& c : {Capture{"amp/resnet50-b64-bf16.json.gz", "resnet50", 64},
                           Capture{"amp/resnet152-b32-bf16.json.gz", "resnet152", 32}}) {
    const Graph captured = read_graph(testing::data_path(c.file));
    ZooOptions o;
    o.model = c.model;
    o.batch = c.batch;
    o.precision = "bf16";
    int64_t counters = 0;
    for (const Tensor& t : captured.tensors)
      if (t.name.find("num_batches_tracked") != std::string::npos) counters += t.bytes;
    const GraphStats real = compute_stats(captured);
    const GraphStats ours = compute_stats(build_zoo_model(o));
    EXPECT_NEAR(static_cast<double>(ours.peak_live_bytes) / real.peak_live_bytes, 1.0, 1e-4)
        << c.model << ": zoo " << ours.peak_live_bytes << ", captured " << real.peak_live_bytes;
    EXPECT_NEAR(ours.persistent_bytes, real.persistent_bytes - counters, 64) << c.model;
    EXPECT_NEAR(ours.flops / real.flops, 1.0, 0.01) << c.model;
  }
}

// --precision reaches the zoo from every command that takes --model (the
// same GraphSource), and a BF16 graph written by `zoo` reads back as format
// 1.2 with its op dtypes.
TEST(ZooPrecision, CliTakesPrecision) {
  const std::string path = ::testing::TempDir() + "zoo_mlp_bf16.json";
  auto r = testing::run_cli("zoo --model mlp-1 --batch 4 --precision bf16 -o " + path);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Graph back = read_graph(path);
  EXPECT_EQ(peak_live_bytes(back), 66968);
  EXPECT_EQ(back.ops[3].math, MathType::kBf16);
  std::remove(path.c_str());
  r = testing::run_cli("stats --model mlp-1 --batch 4 --precision fp16 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\"persistent_bytes\": 39548"), std::string::npos) << r.out;
  r = testing::run_cli("plan --model mlp-1 --batch 4 --precision fp8");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("--precision"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace sa
