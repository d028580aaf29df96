// Hostile exec and values files (issue 15; tests/data/adversarial): every one
// is rejected by the readers, before libtorch sees it, with the file, the
// JSON path and the problem. Before the fixes, these crashed in libtorch
// (strides of 2^60), trained to a wrong loss (strides of 2^62 wrapped), or
// were silently truncated (a tensor id of 2^32 + 2 read as 2, sizes of 5.5
// as 5).

#include <cstdint>
#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "graph/graph_io.h"
#include "runtime/aten/aten_kernels.h"
#include "runtime/aten/aten_program.h"
#include "runtime/aten/values_file.h"
#include "test_util.h"
#include "util/file_io.h"

namespace sa::runtime {
namespace {

using nlohmann::json;
using sa::testing::data_path;
using sa::testing::error_of;

std::string adversarial(const std::string& file) {
  return data_path("adversarial/" + file);
}

Graph tiny_mlp() {
  return read_graph(data_path("capture/tiny_mlp.graph.json.gz"));
}

std::string read_exec_error(const std::string& file) {
  const Graph g = tiny_mlp();
  return error_of([&] { read_aten_program(adversarial(file), g); });
}

TEST(HostileExec, StridesOf2p60AreRejected) {
  EXPECT_EQ(read_exec_error("view_stride_2p60_gelu.exec.json.gz"),
            adversarial("view_stride_2p60_gelu.exec.json.gz") +
                ": ops[2] (aten::gelu.default): args[0].strides[0]: expected a whole number from "
                "0 to 1125899906842624, got the number 1152921504606846976");
}

TEST(HostileExec, StridesThatWrapAreRejected) {
  EXPECT_EQ(read_exec_error("view_stride_wrap.exec.json.gz"),
            adversarial("view_stride_wrap.exec.json.gz") +
                ": ops[1] (aten::addmm.default): args[1].strides[0]: expected a whole number from "
                "0 to 1125899906842624, got the number 4611686018427387904");
}

TEST(HostileExec, TensorIdsOver32BitsAreRejected) {
  EXPECT_EQ(read_exec_error("view_tensor_wrap.exec.json.gz"),
            adversarial("view_tensor_wrap.exec.json.gz") +
                ": ops[1] (aten::addmm.default): args[1].tensor: expected a whole number from 0 "
                "to 29, got the number 4294967298");
}

TEST(HostileExec, FractionalSizesAreRejected) {
  EXPECT_EQ(read_exec_error("view_sizes_float.exec.json.gz"),
            adversarial("view_sizes_float.exec.json.gz") +
                ": ops[1] (aten::addmm.default): args[1].sizes[0]: expected a whole number from 0 "
                "to 1125899906842624, got the number 5.5");
}

// tiny_mlp's exec file, edited, then parsed: the message after "x.json: ".
class ExecEdit : public ::testing::Test {
 protected:
  ExecEdit() : g_(tiny_mlp()) {
    doc_ = json::parse(read_file(data_path("capture/tiny_mlp.exec.json.gz")));
  }
  // ops[1].args[1]: {"tensor": 2, "dtype": "float32", "sizes": [5, 6], "strides": [6, 1]}
  json& view() { return doc_["ops"][1]["args"][1]; }
  std::string error() {
    const std::string e = error_of([&] { parse_aten_program(doc_.dump(), "x.json", g_); });
    return e.rfind("x.json: ", 0) == 0 ? e.substr(8) : e;
  }
  Graph g_;
  json doc_;
};

TEST_F(ExecEdit, TheUneditedFileIsAccepted) {
  EXPECT_EQ(error(), "(no error)");
}

TEST_F(ExecEdit, AnExtentOver2p50IsRejected) {
  // Each number is within 2^50, their product is 2^69: it must not wrap.
  view()["sizes"] = {int64_t{1} << 20, 1};
  view()["strides"] = {int64_t{1} << 49, 1};
  EXPECT_EQ(error(),
            "ops[1] (aten::addmm.default): args[1].strides: the view reaches past element "
            "1125899906842624 of its storage");
}

TEST_F(ExecEdit, AnElementCountOver2p50IsRejected) {
  // Stride 0 (a broadcast) keeps the extent small; the count is 2^60.
  view()["sizes"] = {int64_t{1} << 30, int64_t{1} << 30};
  view()["strides"] = {0, 0};
  EXPECT_EQ(error(),
            "ops[1] (aten::addmm.default): args[1].sizes: the view has over 1125899906842624 "
            "elements");
}

TEST_F(ExecEdit, AViewPastItsTensorIsRejected) {
  // 5 x 6 float32 with strides [7, 1] ends at element 4 * 7 + 5 = 33: byte 136.
  view()["strides"] = {7, 1};
  EXPECT_EQ(error(),
            "ops[1] (aten::addmm.default): args[1]: the view ends at byte 136, past tensor 2's "
            "128 bytes");
}

TEST_F(ExecEdit, ATensorWithoutStorageMustHaveNoElements) {
  view() = {{"empty", true}, {"dtype", "float32"}, {"sizes", {3}}, {"strides", {1}}};
  EXPECT_EQ(error(),
            "ops[1] (aten::addmm.default): args[1]: a tensor without storage (\"empty\") has 3 "
            "elements, not 0");
}

TEST_F(ExecEdit, IdsWrittenAsFloatsAreRejected) {
  doc_["ops"][3]["id"] = 3.0;
  EXPECT_EQ(error(), "ops[3].id: expected a whole number from 3 to 3, got the number 3.0");
}

TEST_F(ExecEdit, WronglyTypedFieldsAreNamed) {
  doc_["tensors"][4]["storage_bytes"] = "320";
  EXPECT_EQ(error(),
            "tensors[4].storage_bytes: expected a whole number from 1 to 320, got the string "
            "\"320\"");
  doc_["tensors"][4]["storage_bytes"] = 320;
  doc_["loss"]["after_op"] = 7.5;
  EXPECT_EQ(error(), "loss.after_op: expected a whole number from 0 to 29, got the number 7.5");
  doc_["loss"]["after_op"] = 7;
  doc_["ops"][2]["random"] = 1;
  EXPECT_EQ(error(), "ops[2].random: expected true or false, got the number 1");
  doc_["ops"][2].erase("random");
  doc_["graph"]["ops"] = 30.0;
  EXPECT_EQ(error(),
            "graph: made for graph \"tiny_mlp\" (30.0 ops, 30 tensors), not for \"tiny_mlp\" (30 "
            "ops, 30 tensors)");
}

// Note [Step scalars]: each use names a number argument of its op once and
// a slot of step_scalars.values.
TEST_F(ExecEdit, StepScalarsAreChecked) {
  // [[argument, slot], ...] (a braced list of pairs would be an object).
  auto uses = [](std::initializer_list<std::pair<json, int>> pairs) {
    json a = json::array();
    for (const auto& [arg, slot] : pairs)
      a.push_back(json::array({arg, slot}));
    return a;
  };
  // ops[20]: add_.Tensor(param, buffer, alpha=-0.01); ops[18]: mul_.Tensor(t, 0.9).
  doc_["step_scalars"] = {{"values", {-0.01, 0.9}}};
  doc_["ops"][20]["step_scalars"] = uses({{"alpha", 0}});
  doc_["ops"][18]["step_scalars"] = uses({{1, 1}});
  EXPECT_EQ(error(), "(no error)");
  const AtenProgram p = parse_aten_program(doc_.dump(), "x.json", g_);
  ASSERT_EQ(p.step_scalars, (std::vector<double>{-0.01, 0.9}));
  ASSERT_EQ(p.ops[20].step_scalars.size(), 1u);
  EXPECT_EQ(p.ops[20].step_scalars[0].kwarg, "alpha");
  EXPECT_EQ(p.ops[18].step_scalars[0].position, 1);
  EXPECT_EQ(p.ops[18].step_scalars[0].slot, 1);

  doc_["ops"][18]["step_scalars"] = uses({{1, 2}});
  EXPECT_EQ(error(),
            "ops[18].step_scalars[0][1]: expected a whole number from 0 to 1, got the number 2");
  doc_["ops"][18]["step_scalars"] = uses({{0, 1}});
  EXPECT_EQ(error(), "ops[18].step_scalars[0]: the argument is an object, not a number");
  doc_["ops"][18]["step_scalars"] = uses({{"beta", 1}});
  EXPECT_EQ(error(), "ops[18].step_scalars[0]: the op has no keyword argument \"beta\"");
  doc_["ops"][18]["step_scalars"] = uses({{1, 1}, {1, 0}});
  EXPECT_EQ(error(), "ops[18].step_scalars[1]: names an argument a second time");
  doc_["ops"][18]["step_scalars"] = uses({{1, 1}});
  doc_["step_scalars"]["values"][1] = "0.9";
  EXPECT_EQ(error(), "step_scalars.values[1]: expected a number, got the string \"0.9\"");
  doc_["step_scalars"]["values"] = json::array();
  EXPECT_EQ(error(), "ops[18].step_scalars[0]: the file gives no step_scalars.values");
}

// Note [Skipped steps]: "skip_if_nonzero" names a float32 input of the op.
// ops[20] (add_.Tensor) reads tensor 26 (float32) and updates 3; tensor 0 is
// the int64 step counter, read by op 0 only.
TEST_F(ExecEdit, SkipFlagsAreChecked) {
  doc_["ops"][20]["skip_if_nonzero"] = 26;
  EXPECT_EQ(error(), "(no error)");
  EXPECT_EQ(parse_aten_program(doc_.dump(), "x.json", g_).ops[20].skip_if_nonzero, 26);
  EXPECT_EQ(parse_aten_program(doc_.dump(), "x.json", g_).ops[19].skip_if_nonzero, -1);
  doc_["ops"][20]["skip_if_nonzero"] = 3;
  EXPECT_EQ(error(), "ops[20].skip_if_nonzero: tensor 3 is not an input of the graph's op 20");
  doc_["ops"][0]["skip_if_nonzero"] = 0;
  doc_["ops"][20].erase("skip_if_nonzero");
  EXPECT_EQ(error(), "ops[0].skip_if_nonzero: tensor 0 is not an input of the graph's op 0");
  doc_["ops"][0].erase("skip_if_nonzero");
  doc_["ops"][20]["skip_if_nonzero"] = 30;
  EXPECT_EQ(error(),
            "ops[20].skip_if_nonzero: expected a whole number from 0 to 29, got the number 30");
  doc_["ops"][20]["skip_if_nonzero"] = "26";
  EXPECT_EQ(error(),
            "ops[20].skip_if_nonzero: expected a whole number from 0 to 29, got the string \"26\"");
}

// Issue 26: an argument error quoted the whole argument (7.4 MB of text).
// Now at most 80 bytes of it, or 60 of a string.
TEST_F(ExecEdit, ArgumentErrorsQuoteAShortExcerpt) {
  if (!aten_available()) GTEST_SKIP() << "built without libtorch";
  const std::string big(1'000'000, '7');
  const ValuesFile init = read_values_file(data_path("capture/tiny_mlp.values.bin"));
  auto run_error = [&] {
    return error_of(
        [&] { run_program_order(g_, parse_aten_program(doc_.dump(), "x.json", g_), init, 1, {}); });
  };
  const json captured = doc_;
  // add.Tensor(t7, 1.0): "other" a float written as {"float": ...}.
  doc_["ops"][4]["args"][1] = {{"float", big}};
  EXPECT_EQ(run_error(),
            "op 4 (aten::add.Tensor): bad float \"" + big.substr(0, 60) + "...(1000000 bytes)\"");
  doc_ = captured;
  // ones_like(t14, dtype=...): a dtype no one has heard of.
  doc_["ops"][8]["kwargs"]["dtype"] = {{"dtype", big}};
  EXPECT_EQ(run_error(), "op 8 (aten::ones_like.default): unsupported dtype \"" +
                             big.substr(0, 60) + "...(1000000 bytes)\"");
  doc_ = captured;
  // A list where the schema takes a number.
  doc_["ops"][4]["kwargs"]["alpha"] = json::array({big});
  EXPECT_EQ(run_error(), "op 4 (aten::add.Tensor): expected a number, got [\"" + big.substr(0, 78) +
                             "...(1000004 bytes)");
}

std::string read_values_error(const std::string& file) {
  return error_of([&] { read_values_file(adversarial(file)); });
}

TEST(HostileValues, AnOffsetNear2p63IsRejected) {
  EXPECT_EQ(read_values_error("v_offset_overflow.values.bin"),
            adversarial("v_offset_overflow.values.bin") +
                " (header): tensors[0].offset: expected a whole number from 0 to 2892, got the "
                "number 9223372036854775744");
}

TEST(HostileValues, ATensorIdOver32BitsIsRejected) {
  EXPECT_EQ(read_values_error("v_tensor_wrap.values.bin"),
            adversarial("v_tensor_wrap.values.bin") +
                " (header): tensors[0].tensor: expected a whole number from 0 to 2147483647, got "
                "the number 4294967296");
}

TEST(HostileValues, TwoEntriesForOneTensorAreRejected) {
  EXPECT_EQ(read_values_error("v_dup_tensor.values.bin"),
            adversarial("v_dup_tensor.values.bin") +
                " (header): tensors[12].tensor: tensor 0 already has a value (tensors[0])");
}

TEST(HostileValues, AnotherGraphsValuesAreRejected) {
  const ValuesFile v = read_values_file(adversarial("v_graph_name_other.values.bin"));
  EXPECT_EQ(error_of([&] { check_values_against(v, tiny_mlp(), "v.bin"); }),
            "v.bin: the values of graph \"other_model\", not of \"tiny_mlp\"");
}

// A values file with the given header and data bytes.
std::string values_file(const std::string& header, size_t data_bytes) {
  std::string out = "SAVALUES";
  auto put = [&](uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i)
      out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  };
  put(1, 4);
  put(0, 4);
  put(header.size(), 8);
  out += header;
  out.resize((out.size() + 63) / 64 * 64 + data_bytes, '\0');
  return out;
}

std::string parse_values_error(const std::string& header) {
  const std::string e = error_of([&] { parse_values_file(values_file(header, 64), "v.bin"); });
  return e.rfind("v.bin (header): ", 0) == 0 ? e.substr(16) : e;
}

TEST(HostileValues, HeaderFieldsAreChecked) {
  // The header (48 bytes here) starts at byte 24 and the data at 128: with 64
  // data bytes, the file is 192 bytes.
  EXPECT_EQ(parse_values_error(R"({"tensors":[{"tensor":0,"bytes":64,"offset":0}]})"),
            "(no error)");
  EXPECT_EQ(parse_values_error(R"({"tensors":[{"tensor":0,"bytes":64,"offset":64}]})"),
            "tensors[0]: 64 bytes at offset 64 run past the end of the file (192 bytes)");
  EXPECT_EQ(parse_values_error(R"({"tensors":[{"tensor":0,"bytes":8.0,"offset":0}]})"),
            "tensors[0].bytes: expected a whole number from 0 to 192, got the number 8.0");
  EXPECT_EQ(parse_values_error(R"({"tensors":[{"tensor":-1,"bytes":8,"offset":0}]})"),
            "tensors[0].tensor: expected a whole number from 0 to 2147483647, got the number -1");
  EXPECT_EQ(parse_values_error(R"({"tensors":[{"tensor":0,"offset":0}]})"),
            "tensors[0].bytes: missing required field");
  EXPECT_EQ(parse_values_error(R"({"graph":7,"tensors":[]})"),
            "graph: expected a string, got the number 7");
  EXPECT_EQ(parse_values_error(R"({"tensors":{}})"), "tensors: expected an array, got an object");
  EXPECT_EQ(parse_values_error(R"([1])"), "(document): expected an object, got an array");
}

// Issue 26: the format aligns every entry to 64 bytes, and an entry's data
// are its own. Before, both were accepted (different losses or NaN, exit 0).
TEST(HostileValues, AnOffsetOffTheAlignmentIsRejected) {
  EXPECT_EQ(parse_values_error(R"({"tensors":[{"tensor":0,"bytes":8,"offset":8}]})"),
            "tensors[0].offset: 8 is not a multiple of 64 (the format aligns every tensor's "
            "data)");
}

TEST(HostileValues, OverlappingEntriesAreRejected) {
  // Entry 1 starts inside entry 0; entry 2 (empty) overlaps nothing.
  EXPECT_EQ(parse_values_error(R"({"tensors":[{"tensor":0,"bytes":64,"offset":0},)"
                               R"({"tensor":1,"bytes":0,"offset":0},)"
                               R"({"tensor":2,"bytes":8,"offset":0}]})"),
            "tensors[2]: its bytes at offsets [0, 8) overlap those of tensors[0] at [0, 64)");
  // Listed out of order: the later entry is named.
  EXPECT_EQ(parse_values_error(R"({"tensors":[{"tensor":3,"bytes":32,"offset":0},)"
                               R"({"tensor":4,"bytes":64,"offset":0}]})"),
            "tensors[1]: its bytes at offsets [0, 64) overlap those of tensors[0] at [0, 32)");
  // Empty entries share an offset with anything.
  EXPECT_EQ(parse_values_error(R"({"tensors":[{"tensor":3,"bytes":32,"offset":0},)"
                               R"({"tensor":4,"bytes":0,"offset":0},)"
                               R"({"tensor":5,"bytes":0,"offset":64}]})"),
            "(no error)");
}

// An entry shorter than its storage (the exec file's storage_bytes) would
// leave the rest zero: a different model, silently.
TEST(HostileValues, AnEntryShorterThanItsStorageIsRejected) {
  const Graph g = tiny_mlp();
  const AtenProgram p = read_aten_program(data_path("capture/tiny_mlp.exec.json.gz"), g);
  ValuesFile v = read_values_file(data_path("capture/tiny_mlp.values.bin"));
  EXPECT_EQ(error_of([&] { check_values_against(v, g, "v.bin", p.storage_bytes); }), "(no error)");
  size_t k = 0;
  while (v.tensors[k].tensor != 3)
    ++k;  // fc1.weight, 16 x 6 float32: 384 bytes
  ASSERT_EQ(p.storage_bytes[3], 384);
  v.tensors[k].data.resize(380);
  EXPECT_EQ(error_of([&] { check_values_against(v, g, "v.bin", p.storage_bytes); }),
            fmt::format("v.bin: tensors[{}] (tensor 3, \"fc1.weight\"): 380 bytes of value for a "
                        "storage of 384 bytes (the exec file's storage_bytes)",
                        k));
  // Without the storages' sizes (a values file alone) it is not known.
  EXPECT_EQ(error_of([&] { check_values_against(v, g, "v.bin"); }), "(no error)");
}

}  // namespace
}  // namespace sa::runtime
