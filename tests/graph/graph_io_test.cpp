#include <filesystem>

#include <gtest/gtest.h>

#include "graph/graph_io.h"
#include "graph/stats.h"
#include "test_util.h"
#include "util/error.h"

namespace sa {
namespace {

using testing::data_path;

constexpr const char* kSmall = R"({
  "format": "swapadvisor-graph", "version": 1, "name": "tiny", "source": "hand",
  "tensors": [
    {"id": 0, "bytes": 100, "kind": "input", "name": "x"},
    {"id": 1, "bytes": 10, "kind": "param", "name": "w"},
    {"id": 2, "bytes": 200, "kind": "activation"},
    {"id": 3, "bytes": 10, "kind": "gradient"}
  ],
  "ops": [
    {"id": 0, "type": "mm", "phase": "forward", "inputs": [0, 1], "outputs": [2], "flops": 2000},
    {"id": 1, "type": "mm_bwd", "phase": "backward", "inputs": [2, 0], "outputs": [3],
     "time_us": 3.5, "workspace_bytes": 7},
    {"id": 2, "type": "sgd", "phase": "update", "inputs": [3], "outputs": [], "updates": [1]}
  ]
})";

TEST(GraphIo, ParsesEveryField) {
  Graph g = parse_graph(kSmall, "small.json");
  EXPECT_EQ(g.name, "tiny");
  ASSERT_EQ(g.num_tensors(), 4);
  ASSERT_EQ(g.num_ops(), 3);
  EXPECT_EQ(g.tensors[0].kind, TensorKind::kInput);
  EXPECT_EQ(g.tensors[0].name, "x");
  EXPECT_EQ(g.tensors[2].bytes, 200);
  EXPECT_EQ(g.ops[0].phase, Phase::kForward);
  EXPECT_EQ(g.ops[0].flops, 2000);
  EXPECT_FALSE(g.ops[0].time_us.has_value());
  EXPECT_EQ(g.ops[1].time_us, 3.5);
  EXPECT_EQ(g.ops[1].workspace_bytes, 7);
  EXPECT_EQ(g.ops[2].updates, std::vector<TensorId>{1});
  EXPECT_TRUE(g.ops[1].updates.empty());
}

TEST(GraphIo, RoundTripsThroughJsonAndGzip) {
  const Graph g = parse_graph(kSmall, "small.json");
  const auto dir = std::filesystem::temp_directory_path();
  for (const char* name : {"sa_roundtrip.json", "sa_roundtrip.json.gz"}) {
    const std::string path = (dir / name).string();
    write_graph(g, path);
    const Graph back = read_graph(path);
    EXPECT_EQ(graph_to_json(back), graph_to_json(g)) << name;
    std::filesystem::remove(path);
  }
}

TEST(GraphIo, SharedGraphsReadAndRoundTrip) {
  for (const auto& entry : std::filesystem::directory_iterator(data_path("graphs"))) {
    if (!entry.path().string().ends_with(".json.gz")) continue;  // the README
    const Graph g = read_graph(entry.path().string());
    EXPECT_GT(g.num_ops(), 100) << entry.path();
    const Graph back = parse_graph(graph_to_json(g), "roundtrip");
    EXPECT_EQ(graph_to_json(back), graph_to_json(g)) << entry.path();
  }
}

TEST(GraphIo, ErrorsNameFileAndPath) {
  std::string bad = kSmall;
  bad.replace(bad.find("\"inputs\": [2, 0]"), 16, "\"inputs\": [2, 9]");
  try {
    parse_graph(bad, "small.json");
    FAIL() << "accepted an unknown tensor id";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "small.json: ops[1].inputs[1]: unknown tensor id 9 (the graph has 4 tensors)");
  }
}

// Format 1.2's op dtype (docs/graph-format.md, "Precision"): absent is
// float32, so 1.0 and 1.1 files cost as before; the writer says minor
// version 2 only when an op uses it.
TEST(GraphIo, OpDtypeIsOptionalAndRoundTrips) {
  Graph g = parse_graph(kSmall, "small.json");
  for (const Op& op : g.ops)
    EXPECT_EQ(op.math, MathType::kFp32);
  EXPECT_EQ(graph_to_json(g).find("minor_version"), std::string::npos);
  std::string text = kSmall;
  const std::string flops = "\"flops\": 2000";
  text.replace(text.find(flops), flops.size(), flops + ", \"dtype\": \"bfloat16\"");
  g = parse_graph(text, "small.json");
  EXPECT_EQ(g.ops[0].math, MathType::kBf16);
  EXPECT_EQ(g.ops[1].math, MathType::kFp32);
  const std::string out = graph_to_json(g);
  EXPECT_NE(out.find("\"minor_version\":2"), std::string::npos);
  EXPECT_NE(out.find("\"dtype\":\"bfloat16\""), std::string::npos);
  EXPECT_EQ(parse_graph(out, "back").ops[0].math, MathType::kBf16);
  for (const char* name : {"float32", "tf32", "float16", "bfloat16", "float8"})
    EXPECT_EQ(to_string(*parse_math_type(name)), name);
}

// Format 1.3's recompute_skips_updates (docs/graph-format.md,
// "Recomputation"): absent is false; the writer says minor version 3 when an
// op uses it; anything but a boolean is an error naming the op.
TEST(GraphIo, RecomputeSkipsUpdatesIsOptionalAndRoundTrips) {
  Graph g = parse_graph(kSmall, "small.json");
  for (const Op& op : g.ops)
    EXPECT_FALSE(op.recompute_skips_updates);
  std::string text = kSmall;
  const std::string flops = "\"flops\": 2000";
  text.replace(text.find(flops), flops.size(),
               flops + ", \"dtype\": \"bfloat16\", \"recompute_skips_updates\": true");
  g = parse_graph(text, "small.json");
  EXPECT_TRUE(g.ops[0].recompute_skips_updates);
  const std::string out = graph_to_json(g);
  EXPECT_NE(out.find("\"minor_version\":3"), std::string::npos);
  EXPECT_NE(out.find("\"recompute_skips_updates\":true"), std::string::npos);
  EXPECT_TRUE(parse_graph(out, "back").ops[0].recompute_skips_updates);
  text.replace(text.find("true"), 4, "\"yes\"");
  EXPECT_NE(testing::error_of([&] {
              parse_graph(text, "small.json");
            }).find("small.json: ops[0].recompute_skips_updates"),
            std::string::npos)
      << testing::error_of([&] { parse_graph(text, "small.json"); });
}

TEST(GraphIo, BadOpDtypeNamesFileAndPath) {
  std::string text = kSmall;
  const std::string time = "\"time_us\": 3.5";
  text.replace(text.find(time), time.size(), time + ", \"dtype\": \"half\"");
  EXPECT_EQ(testing::error_of([&] { parse_graph(text, "small.json"); }),
            "small.json: ops[1].dtype: bad dtype \"half\" (expected float32, tf32, float16, "
            "bfloat16 or float8)");
  text = kSmall;
  text.replace(text.find(time), time.size(), time + ", \"dtype\": 16");
  EXPECT_NE(
      testing::error_of([&] { parse_graph(text, "small.json"); }).find("small.json: ops[1].dtype"),
      std::string::npos);
}

TEST(GraphIo, MissingFileIsAClearError) {
  try {
    read_graph("/nonexistent/graph.json");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/graph.json: cannot open"),
              std::string::npos);
  }
}

TEST(GraphIo, KindsTakeTheirArticle) {
  EXPECT_EQ(with_article(TensorKind::kActivation), "an activation");
  EXPECT_EQ(with_article(TensorKind::kInput), "an input");
  EXPECT_EQ(with_article(TensorKind::kOptimizerState), "an optimizer_state");
  EXPECT_EQ(with_article(TensorKind::kParam), "a param");
  EXPECT_EQ(with_article(TensorKind::kGradient), "a gradient");
}

}  // namespace
}  // namespace sa
