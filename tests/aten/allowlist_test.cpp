// Note [ATen allow-list] (issue 26): an exec file names only operators the
// capture records. Before the list, `run --kernels aten` ran whatever
// operator an exec file named: aten::from_file created, grew and zeroed
// files and the run exited 0.

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "graph/graph_io.h"
#include "runtime/aten/aten_allowlist.h"
#include "runtime/aten/aten_kernels.h"
#include "runtime/aten/aten_program.h"
#include "runtime/aten/values_file.h"
#include "test_util.h"
#include "util/file_io.h"

namespace sa::runtime {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using sa::testing::data_path;
using sa::testing::error_of;
using sa::testing::run_cli;

// Operators that touch files, devices, the process or a tensor's storage,
// or read values into the host program: never on the list.
const char* const kForbidden[] = {"aten::from_file",
                                  "aten::set_",
                                  "aten::resize_",
                                  "aten::resize_as_",
                                  "aten::_local_scalar_dense",
                                  "aten::item",
                                  "aten::to",
                                  "aten::_copy_from",
                                  "aten::detach_",
                                  "aten::_pin_memory",
                                  "aten::pin_memory",
                                  "aten::record_stream",
                                  "aten::_print",
                                  "aten::save",
                                  "aten::load",
                                  "aten::storage_offset",
                                  "prim::Print",
                                  "sa::all_reduce",
                                  "aten::_cudnn_rnn_flatten_weight"};

TEST(AtenAllowList, IsSortedAndHasNoForbiddenOperator) {
  const auto list = aten_allowlist();
  ASSERT_FALSE(list.empty());
  for (size_t i = 1; i < list.size(); ++i)
    EXPECT_LT(list[i - 1].name, list[i].name) << "at " << i;
  for (const char* op : kForbidden)
    EXPECT_EQ(find_allowed_aten_op(op), nullptr) << op;
  for (const AllowedAtenOp& a : list) {
    EXPECT_EQ(a.name.substr(0, 6), "aten::") << a.name;
    EXPECT_FALSE(a.family.empty()) << a.name;
    EXPECT_EQ(find_allowed_aten_op(a.name), &a);
  }
  EXPECT_EQ(find_allowed_aten_op("aten::addm"), nullptr);
  EXPECT_EQ(find_allowed_aten_op("aten::addmm.default"), nullptr);  // names, not overloads
}

// Every operator of the committed captures, and of the profiled training
// graphs (torchvision CNNs, GPT, LSTM; fp32 and bf16 autocast), is on it.
TEST(AtenAllowList, HasEveryOperatorOfTheTestCaptures) {
  std::vector<std::string> graphs;
  for (const char* dir : {"capture", "graphs", "amp"})
    for (const auto& e : fs::directory_iterator(data_path(dir))) {
      const std::string p = e.path().string();
      if (p.ends_with(".graph.json.gz") ||
          (dir != std::string("capture") && p.ends_with(".json.gz")))
        graphs.push_back(p);
    }
  ASSERT_GE(graphs.size(), 15u);
  std::set<std::string> missing;
  for (const std::string& p : graphs)
    for (const Op& op : read_graph(p).ops)
      if (op.type.rfind("aten::", 0) == 0 && !find_allowed_aten_op(op.type))
        missing.insert(op.type);
  EXPECT_TRUE(missing.empty()) << fmt::format("{}", fmt::join(missing, ", "));
}

// tiny_mlp's exec file, edited: the error after "x.json: ".
class AllowListEdit : public ::testing::Test {
 protected:
  AllowListEdit() : g_(read_graph(data_path("capture/tiny_mlp.graph.json.gz"))) {
    doc_ = json::parse(read_file(data_path("capture/tiny_mlp.exec.json.gz")));
  }
  std::string error() {
    const std::string e = error_of([&] { parse_aten_program(doc_.dump(), "x.json", g_); });
    return e.rfind("x.json: ", 0) == 0 ? e.substr(8) : e;
  }
  Graph g_;
  json doc_;
};

TEST_F(AllowListEdit, AnOperatorOffTheListIsRefusedByName) {
  // ones_like(t14) becomes from_file(path, shared=True, size=4): refused
  // even when the graph names it too.
  doc_["ops"][8]["op"] = "aten::from_file.default";
  doc_["ops"][8]["args"] = {"/tmp/x", true, 4};
  doc_["ops"][8]["kwargs"] = json::object();
  const std::string want =
      "ops[8].op: operator \"aten::from_file.default\" is not one that swapadvisor-capture "
      "records, so an exec file may not run it (Note [ATen allow-list], docs/capture.md)";
  EXPECT_EQ(error(), want);
  g_.ops[8].type = "aten::from_file";
  EXPECT_EQ(error(), want);
}

TEST_F(AllowListEdit, AnOverloadIsAShortName) {
  doc_["ops"][2]["op"] = "aten::gelu." + std::string(100, 'x');
  // Quoted as every name is: its first 60 bytes.
  EXPECT_EQ(error(), "ops[2].op: operator \"aten::gelu." + std::string(49, 'x') +
                         "...(111 bytes)\": the overload is not a name of at most 64 letters, "
                         "digits and underscores");
  doc_["ops"][2]["op"] = "aten::gelu.de-fault";
  EXPECT_NE(error().find("the overload is not a name"), std::string::npos);
}

std::string quoted(const std::string& s) {
  return "'" + s + "'";
}

// The command line: crafted files (exec file and graph) are refused with
// exit status 1, and no file appears. Before the allow-list, this run
// created the file.
TEST(AtenAllowListCli, FromFileIsRefusedAndNoFileIsMade) {
  const fs::path dir = fs::path(::testing::TempDir()) / "allowlist_cli";
  fs::remove_all(dir);
  fs::create_directories(dir);
  json doc = json::parse(read_file(data_path("capture/tiny_mlp.exec.json.gz")));
  const std::string target = (dir / "made_by_exec").string();
  doc["ops"][8]["op"] = "aten::from_file.default";
  doc["ops"][8]["args"] = {target, true, 4096};
  doc["ops"][8]["kwargs"] = json::object();
  const std::string exec = (dir.parent_path() / "from_file.exec.json").string();
  write_file(exec, doc.dump());
  // The graph says so too (its op types are not in the plan's fingerprint).
  json graph = json::parse(read_file(data_path("capture/tiny_mlp.graph.json.gz")));
  graph["ops"][8]["type"] = "aten::from_file";
  const std::string graph_file = (dir.parent_path() / "from_file.graph.json").string();
  write_file(graph_file, graph.dump());
  const auto r =
      run_cli("run " + quoted(graph_file) + " " + quoted(data_path("adversarial/tiny.plan.json")) +
                  " --kernels aten --iterations 1 --exec " + quoted(exec) + " --values " +
                  quoted(data_path("capture/tiny_mlp.values.bin")),
              60);
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_EQ(r.err, "swapadvisor: error: " + exec +
                       ": ops[8].op: operator \"aten::from_file.default\" is not one that "
                       "swapadvisor-capture records, so an exec file may not run it (Note [ATen "
                       "allow-list], docs/capture.md)\n");
  EXPECT_TRUE(fs::is_empty(dir)) << "a file appeared in " << dir;
}

}  // namespace
}  // namespace sa::runtime
