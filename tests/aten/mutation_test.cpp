// A hostile-input round against the exec file (issue 26): seeded mutations
// of tiny_mlp's exec file - operators off the allow-list (aten::from_file
// into a temporary directory among them), in-place twins, other overloads,
// out= arguments, reads of an op's own output, tensors the op does not
// access, unknown keyword arguments, extra arguments and results - each read
// and run in program order. Every one must end in an sa::Error or train
// exactly as the unmutated file does, and no file may appear. Prints its
// seed; rerun with SA_TEST_SEED=<seed> (and SA_TEST_FUZZ_ITERATIONS=<n>).

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "graph/graph_io.h"
#include "runtime/aten/aten_allowlist.h"
#include "runtime/aten/aten_kernels.h"
#include "runtime/aten/aten_program.h"
#include "runtime/aten/values_file.h"
#include "test_util.h"
#include "util/error.h"
#include "util/file_io.h"

namespace sa::runtime {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using sa::testing::data_path;

uint64_t test_seed() {
  if (const char* s = std::getenv("SA_TEST_SEED")) return std::strtoull(s, nullptr, 0);
  return 20261205;
}

int iterations(int fallback) {
  if (const char* s = std::getenv("SA_TEST_FUZZ_ITERATIONS")) return std::atoi(s);
  return fallback;
}

// Runs in dir (a relative path an operator opens lands there); restores the
// working directory.
class InDirectory {
 public:
  explicit InDirectory(const fs::path& dir) : previous_(fs::current_path()) {
    fs::current_path(dir);
  }
  ~InDirectory() { fs::current_path(previous_); }

 private:
  fs::path previous_;
};

// Every tensor view in an encoded value.
void views_in(json& v, std::vector<json*>& out) {
  if (v.is_array()) {
    for (json& x : v)
      views_in(x, out);
  } else if (v.is_object() && v.contains("tensor")) {
    out.push_back(&v);
  }
}

bool accesses(const Op& op, TensorId t) {
  bool found = false;
  for_each_access(op, [&](TensorId x, Access) { found |= x == t; });
  return found;
}

struct Mutation {
  std::string what;
  bool must_refuse = true;  // false: it may also run, and then train as the original
};

// One mutation of op o of (g, doc).
Mutation mutate(std::mt19937_64& rng, Graph& g, json& doc, const fs::path& dir) {
  auto pick = [&](size_t n) { return static_cast<size_t>(rng() % n); };
  const OpId o = static_cast<OpId>(pick(doc["ops"].size()));
  json& op = doc["ops"][o];
  const std::string qualname = op["op"];
  const std::string name = qualname.substr(0, qualname.rfind('.'));
  const std::string overload = qualname.substr(qualname.rfind('.') + 1);
  std::vector<json*> views;
  views_in(op["args"], views);
  const std::string at = fmt::format("op {} ({}): ", o, qualname);
  switch (pick(8)) {
    case 0: {  // an operator off the list; the graph may name it too
      static const char* const kOff[] = {
          "aten::from_file", "aten::set_",       "aten::resize_", "aten::_local_scalar_dense",
          "aten::to",        "aten::_copy_from", "aten::detach_", "sa::all_reduce"};
      const std::string off = kOff[pick(std::size(kOff))];
      op["op"] = off + ".default";
      if (off == "aten::from_file")
        op["args"] = {(dir / fmt::format("f{}", rng() % 1000)).string(), true, 4096};
      const bool graph_too = rng() % 2;
      if (graph_too) g.ops[o].type = off;
      return {at + off + (graph_too ? " (the graph's op too)" : "")};
    }
    case 1: {  // the in-place twin, in the graph too: it writes what the op reads
      if (name.ends_with("_") || !find_allowed_aten_op(name + "_")) return {at + "none", false};
      op["op"] = name + "_." + overload;
      g.ops[o].type = name + "_";
      return {at + "in place: " + name + "_"};
    }
    case 2: {  // another overload of the same operator
      static const char* const kOverloads[] = {"default", "Tensor",     "Scalar",
                                               "out",     "Scalar_out", "dim_IntList",
                                               "self",    "int",        "Tensor_out"};
      const std::string ov = kOverloads[pick(std::size(kOverloads))];
      op["op"] = name + "." + ov;
      return {at + "overload " + ov, false};
    }
    case 3: {  // out= the view of its first tensor argument
      if (views.empty()) return {at + "none", false};
      op["op"] = name + ".out";
      op["kwargs"]["out"] = *views[0];
      return {at + fmt::format("out= tensor {}", (*views[0])["tensor"].dump())};
    }
    case 4: {  // a tensor argument becomes one of the op's outputs
      if (views.empty() || g.ops[o].outputs.empty()) return {at + "none", false};
      json& v = *views[pick(views.size())];
      const TensorId t = g.ops[o].outputs[pick(g.ops[o].outputs.size())];
      v["tensor"] = t;
      return {at + fmt::format("reads its output {}", t)};
    }
    case 5: {  // a tensor argument becomes a tensor the op does not access
      if (views.empty()) return {at + "none", false};
      json& v = *views[pick(views.size())];
      TensorId t;
      do {
        t = static_cast<TensorId>(pick(g.tensors.size()));
      } while (accesses(g.ops[o], t));
      v["tensor"] = t;
      return {at + fmt::format("reads tensor {}, not an access", t)};
    }
    case 6: {  // an argument the schema does not have
      const std::string key = fmt::format("k{}", rng() % 100);
      op["kwargs"][key] = 1;
      op["args"].push_back(static_cast<int64_t>(rng() % 3));
      return {at + "keyword argument " + key + " and an extra positional one"};
    }
    default: {  // results that do not fit the returns
      if (rng() % 2) {
        op["results"].push_back(nullptr);
        return {at + "an extra result"};
      }
      for (json& r : op["results"])
        if (!r.is_null()) {
          r = json::array({r});
          return {at + "a result wrapped in a list"};
        }
      return {at + "none", false};
    }
  }
}

TEST(AtenExecMutations, AreRefusedOrTrainAsTheOriginal) {
  if (!aten_available()) GTEST_SKIP() << "built without libtorch";
  const uint64_t seed = test_seed();
  const int n = iterations(300);
  std::cout << "seed " << seed << " (set SA_TEST_SEED to change), " << n << " mutations\n";

  const Graph g0 = read_graph(data_path("capture/tiny_mlp.graph.json.gz"));
  const json doc0 = json::parse(read_file(data_path("capture/tiny_mlp.exec.json.gz")));
  const ValuesFile init = read_values_file(data_path("capture/tiny_mlp.values.bin"));
  const AtenProgram p0 = parse_aten_program(doc0.dump(), "tiny_mlp.exec.json", g0);
  const ProgramOrderResult want = run_program_order(g0, p0, init, 2, {});

  const fs::path dir = fs::path(::testing::TempDir()) / fmt::format("exec_mutations_{}", seed);
  fs::remove_all(dir);
  fs::create_directories(dir);
  InDirectory in(dir);
  std::mt19937_64 rng(seed);
  int refused = 0, ran = 0;
  for (int i = 0; i < n; ++i) {
    Graph g = g0;
    json doc = doc0;
    const Mutation m = mutate(rng, g, doc, dir);
    const std::string context = fmt::format("seed {}, mutation {}: {}", seed, i, m.what);
    try {
      const AtenProgram p = parse_aten_program(doc.dump(), "mutant.exec.json", g);
      const ProgramOrderResult r = run_program_order(g, p, init, 2, {});
      ++ran;
      EXPECT_FALSE(m.must_refuse) << context << ": ran";
      EXPECT_EQ(r.losses, want.losses) << context;
      ASSERT_EQ(r.final_state.tensors.size(), want.final_state.tensors.size()) << context;
      for (size_t k = 0; k < want.final_state.tensors.size(); ++k)
        EXPECT_EQ(r.final_state.tensors[k].data, want.final_state.tensors[k].data)
            << context << ": tensor " << want.final_state.tensors[k].tensor;
    } catch (const Error&) {
      ++refused;
    } catch (const std::exception& e) {
      ADD_FAILURE() << context << ": not an sa::Error: " << e.what();
    }
    ASSERT_TRUE(fs::is_empty(dir)) << context << ": a file appeared in " << dir;
  }
  std::cout << refused << " refused, " << ran << " ran as the original\n";
  EXPECT_GT(refused, n / 2);
}

}  // namespace
}  // namespace sa::runtime
