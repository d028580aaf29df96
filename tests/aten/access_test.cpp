// Note [ATen access check] (issue 26): an exec op that writes what its graph
// op only reads, or reads what it creates, or whose arguments do not fit its
// schema, is refused before anything runs. Before the check, each of these
// ran and trained differently without a word. The schemas here are written
// by hand (as libtorch 1.13 and 2.x declare them); with libtorch, the same
// edits are refused by make_aten_kernels with libtorch's own schemas.

#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "graph/graph_io.h"
#include "runtime/aten/aten_access.h"
#include "runtime/aten/aten_kernels.h"
#include "runtime/aten/aten_program.h"
#include "test_util.h"
#include "util/file_io.h"

namespace sa::runtime {
namespace {

using nlohmann::json;
using sa::testing::data_path;
using sa::testing::error_of;

AtenSchemaArgument tensor(std::string name, bool writes = false, bool kwarg_only = false) {
  AtenSchemaArgument a;
  a.name = std::move(name);
  a.type = "Tensor";
  a.takes_tensors = true;
  a.writes = writes;
  a.kwarg_only = kwarg_only;
  return a;
}

AtenSchemaArgument scalar(std::string name, bool has_default, bool kwarg_only = false) {
  AtenSchemaArgument a;
  a.name = std::move(name);
  a.type = "Scalar";
  a.has_default = has_default;
  a.kwarg_only = kwarg_only;
  return a;
}

AtenSchemaArgument plain(std::string name, std::string type) {
  AtenSchemaArgument a;
  a.name = std::move(name);
  a.type = std::move(type);
  return a;
}

AtenSchemaArgument string_arg(std::string name) {
  AtenSchemaArgument a;
  a.name = std::move(name);
  a.type = "str";
  a.has_default = true;
  return a;
}

// gelu(Tensor self, *, str approximate='none') -> Tensor
AtenSchema gelu() {
  return {"aten::gelu", {tensor("self"), string_arg("approximate")}, {AtenReturn::kTensor}};
}
// gelu_(Tensor(a!) self, *, str approximate='none') -> Tensor(a!)
AtenSchema gelu_() {
  return {"aten::gelu_", {tensor("self", true), string_arg("approximate")}, {AtenReturn::kTensor}};
}
// add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
AtenSchema add_tensor() {
  return {"aten::add.Tensor",
          {tensor("self"), tensor("other"), scalar("alpha", true, true)},
          {AtenReturn::kTensor}};
}
// add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)
AtenSchema add_out() {
  return {"aten::add.out",
          {tensor("self"), tensor("other"), scalar("alpha", true, true), tensor("out", true, true)},
          {AtenReturn::kTensor}};
}
// addmm(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1) -> Tensor
AtenSchema addmm() {
  return {"aten::addmm",
          {tensor("self"), tensor("mat1"), tensor("mat2"), scalar("beta", true, true),
           scalar("alpha", true, true)},
          {AtenReturn::kTensor}};
}

// tiny_mlp (tests/data/capture): op 1 addmm(t1, t2, t3) -> t4, op 2
// gelu(t4) -> t5, op 4 add.Tensor(t7, 1.0) -> t8.
class AccessCheck : public ::testing::Test {
 protected:
  AccessCheck() : g_(read_graph(data_path("capture/tiny_mlp.graph.json.gz"))) {
    doc_ = json::parse(read_file(data_path("capture/tiny_mlp.exec.json.gz")));
  }
  static json view(TensorId t, std::vector<int64_t> sizes, std::vector<int64_t> strides) {
    return {
        {"tensor", t}, {"dtype", "float32"}, {"sizes", sizes}, {"strides", strides}, {"offset", 0}};
  }
  // The error of checking op o against schema s, after "x.exec.json: ".
  std::string check(OpId o, const AtenSchema& s) {
    const std::string e = error_of([&] {
      const AtenProgram p = parse_aten_program(doc_.dump(), "x.exec.json", g_);
      check_aten_access(g_, p, o, s);
    });
    return e.rfind("x.exec.json: ", 0) == 0 ? e.substr(13) : e;
  }
  Graph g_;
  json doc_;
};

TEST_F(AccessCheck, TheCapturedOpsPass) {
  EXPECT_EQ(check(1, addmm()), "(no error)");
  EXPECT_EQ(check(2, gelu()), "(no error)");
  EXPECT_EQ(check(4, add_tensor()), "(no error)");
}

TEST_F(AccessCheck, AnInPlaceOpWhereTheGraphOnlyReadsIsRefused) {
  // The graph and the exec file both say gelu_ (the names agree), but the
  // graph's op reads tensor 4 and creates tensor 5: gelu_ would overwrite
  // the backward's input (gelu_backward reads tensor 4).
  g_.ops[2].type = "aten::gelu_";
  doc_["ops"][2]["op"] = "aten::gelu_.default";
  EXPECT_EQ(check(2, gelu_()),
            "ops[2] (aten::gelu_.default): argument self (Tensor) writes tensor 4, which the "
            "graph's op only reads");
}

TEST_F(AccessCheck, AnOutOverloadWritingAnInputIsRefused) {
  // Same name as the graph's op (aten::add), another overload: out= tensor 7.
  doc_["ops"][4]["op"] = "aten::add.out";
  doc_["ops"][4]["args"][1] = view(7, {5, 16}, {16, 1});
  doc_["ops"][4]["kwargs"]["out"] = view(7, {5, 16}, {16, 1});
  EXPECT_EQ(check(4, add_out()),
            "ops[4] (aten::add.out): argument out (Tensor) writes tensor 7, which the graph's op "
            "only reads");
}

TEST_F(AccessCheck, ReadingItsOwnOutputIsRefused) {
  // addmm's bias (tensor 1, 16 floats): 16 floats of tensor 4, its output.
  doc_["ops"][1]["args"][0] = view(4, {16}, {1});
  EXPECT_EQ(check(1, addmm()),
            "ops[1] (aten::addmm.default): argument self (Tensor) reads tensor 4, which the op "
            "creates: it holds nothing before the op writes it");
}

TEST_F(AccessCheck, ArgumentsMustFitTheSchema) {
  doc_["ops"][4]["kwargs"]["bogus"] = 1;
  EXPECT_EQ(check(4, add_tensor()),
            "ops[4] (aten::add.Tensor): keyword argument \"bogus\" is not an argument of "
            "aten::add.Tensor");
  doc_["ops"][4]["kwargs"] = {{"other", 2.0}};
  EXPECT_EQ(check(4, add_tensor()),
            "ops[4] (aten::add.Tensor): keyword argument \"other\" is also given positionally");
  doc_["ops"][4]["kwargs"] = json::object();
  doc_["ops"][4]["args"].push_back(1);
  doc_["ops"][4]["args"].push_back(1);
  EXPECT_EQ(check(4, add_tensor()),
            "ops[4] (aten::add.Tensor): 4 positional arguments for a schema with 2 "
            "(aten::add.Tensor)");
  doc_["ops"][4]["args"] = json::array({view(7, {5, 16}, {16, 1})});
  EXPECT_EQ(check(4, add_tensor()),
            "ops[4] (aten::add.Tensor): argument other (Tensor) is missing and has no default");
  doc_["ops"][4]["args"] = json::array({view(7, {5, 16}, {16, 1}), 1.0});
  doc_["ops"][4]["kwargs"] = {{"alpha", view(7, {5, 16}, {16, 1})}};
  EXPECT_EQ(check(4, add_tensor()),
            "ops[4] (aten::add.Tensor): argument alpha (Scalar) is given a tensor");
}

TEST_F(AccessCheck, ResultsMustFitTheReturns) {
  doc_["ops"][2]["results"].push_back(nullptr);
  EXPECT_EQ(check(2, gelu()),
            "ops[2] (aten::gelu.default): 2 results for a schema with 1 returns (aten::gelu)");
  doc_["ops"][2]["results"] = json::array({json::array({view(5, {5, 16}, {16, 1})})});
  EXPECT_EQ(check(2, gelu()),
            "ops[2] (aten::gelu.default): results[0]: a list for a return that is not a "
            "Tensor[]");
}

TEST_F(AccessCheck, UndeclaredWritesCountAsWrites) {
  // Batch norm in training writes its running statistics without its
  // schema saying so (Note [ATen allow-list]); tiny_cnn's op 2 updates them.
  const Graph g = read_graph(data_path("capture/tiny_cnn.graph.json.gz"));
  json doc = json::parse(read_file(data_path("capture/tiny_cnn.exec.json.gz")));
  ASSERT_EQ(doc["ops"][2]["op"], "aten::native_batch_norm.default");
  AtenSchema bn{"aten::native_batch_norm",
                {tensor("input"), tensor("weight"), tensor("bias"), tensor("running_mean"),
                 tensor("running_var"), plain("training", "bool"), plain("momentum", "float"),
                 plain("eps", "float")},
                {AtenReturn::kTensor, AtenReturn::kTensor, AtenReturn::kTensor}};
  auto check_bn = [&](const Graph& gg) {
    const std::string e = error_of(
        [&] { check_aten_access(gg, parse_aten_program(doc.dump(), "c.exec.json", gg), 2, bn); });
    return e;
  };
  EXPECT_EQ(check_bn(g), "(no error)");
  // A graph that says the op only reads them (and an exec file made for it).
  Graph reads = g;
  Op& op = reads.ops[2];
  for (TensorId t : op.updates)
    op.inputs.push_back(t);
  op.updates.clear();
  op.recompute_skips_updates = false;
  const std::string e = check_bn(reads);
  EXPECT_NE(e.find("argument running_mean (Tensor) writes tensor"), std::string::npos) << e;
  EXPECT_NE(e.find("which the graph's op only reads"), std::string::npos) << e;
  // In eval mode (training false) batch norm only reads them.
  doc["ops"][2]["args"][5] = false;
  EXPECT_EQ(check_bn(reads), "(no error)");
}

// The same edits against libtorch's schemas: make_aten_kernels refuses them.
TEST_F(AccessCheck, LibtorchSchemasAreChecked) {
  if (!aten_available()) GTEST_SKIP() << "built without libtorch";
  auto kernels_error = [&] {
    const std::string e = error_of([&] {
      const AtenProgram p = parse_aten_program(doc_.dump(), "x.exec.json", g_);
      make_aten_kernels(g_, p, {});
    });
    return e.rfind("x.exec.json: ", 0) == 0 ? e.substr(13) : e;
  };
  EXPECT_EQ(kernels_error(), "(no error)");
  const json captured = doc_;
  g_.ops[2].type = "aten::gelu_";
  doc_["ops"][2]["op"] = "aten::gelu_.default";
  EXPECT_EQ(kernels_error(),
            "ops[2] (aten::gelu_.default): argument self (Tensor) writes tensor 4, which the "
            "graph's op only reads");
  g_.ops[2].type = "aten::gelu";
  doc_ = captured;
  doc_["ops"][4]["op"] = "aten::add.out";
  doc_["ops"][4]["args"][1] = view(7, {5, 16}, {16, 1});
  doc_["ops"][4]["kwargs"]["out"] = view(7, {5, 16}, {16, 1});
  EXPECT_EQ(kernels_error(),
            "ops[4] (aten::add.out): argument out (Tensor) writes tensor 7, which the graph's op "
            "only reads");
  doc_ = captured;
  doc_["ops"][1]["args"][0] = view(4, {16}, {1});
  EXPECT_EQ(kernels_error(),
            "ops[1] (aten::addmm.default): argument self (Tensor) reads tensor 4, which the op "
            "creates: it holds nothing before the op writes it");
}

}  // namespace
}  // namespace sa::runtime
