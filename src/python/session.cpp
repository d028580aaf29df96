// swapadvisor._native.Session: runtime::AtenSession (Note [Training
// session] in runtime/aten/aten_session.h) for swapadvisor.Trainer
// (python/swapadvisor/trainer.py). The Trainer hands over the paths of the
// graph, plan and exec files in its cache and the values in memory (or a
// values file's path); each is read and checked as `swapadvisor run
// --kernels aten` reads them, and the plan is verified before anything runs.
//
// The GIL is released while a step runs: the step waits for the run's
// thread, which never calls into Python.

#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include <fmt/format.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "api/source.h"
#include "cost/device.h"
#include "graph/graph_io.h"
#include "plan/plan_io.h"
#include "plan/verify.h"
#include "python/bindings.h"
#include "runtime/aten/aten_kernels.h"
#include "runtime/aten/aten_program.h"
#include "runtime/aten/aten_session.h"
#include "runtime/aten/values_file.h"
#include "runtime/mpi/ranks.h"
#include "util/error.h"

namespace py = pybind11;

namespace sa::python {
namespace {

using runtime::AtenSession;
using runtime::BatchValue;

// A value per tensor as the Trainer holds them: (tensor id, name, kind, an
// object with the buffer protocol), copied.
using ValueList = std::vector<std::tuple<int, std::string, std::string, py::buffer>>;

runtime::ValuesFile values_from(const ValueList& list) {
  runtime::ValuesFile v;  // no graph name: the Trainer's own, of this graph
  for (const auto& [tensor, name, kind, buffer] : list) {
    const py::buffer_info b = buffer.request();
    runtime::TensorValue t;
    t.tensor = tensor;
    t.name = name;
    t.kind = kind;
    const auto* p = static_cast<const std::byte*>(b.ptr);
    t.data.assign(p, p + b.size * b.itemsize);
    v.tensors.push_back(std::move(t));
  }
  return v;
}

// values: a values file's path, or a ValueList (no file between the Trainer
// and the run: a ResNet-18's 94 MB took 0.5 s to write).
std::unique_ptr<AtenSession> open_session(const std::string& graph_path,
                                          const std::string& plan_path,
                                          const std::string& exec_path, const py::object& values,
                                          const std::string& device, int threads) {
  std::optional<runtime::ValuesFile> given;
  std::string values_path = "the values";
  if (py::isinstance<py::str>(values))
    values_path = values.cast<std::string>();
  else
    given = values_from(values.cast<ValueList>());
  py::gil_scoped_release unlocked;
  const Graph captured = read_graph(graph_path);
  // A data-parallel plan is one rank's: the graph with its all-reduces
  // spliced in (Note [ATen data parallelism]); the values are the captured
  // graph's, whose name it keeps.
  api::GraphAndPlan gp = api::read_graph_and_plan(captured, plan_path, load_device("v100-16gb"));
  Graph g = std::move(gp.graph);
  Plan p = std::move(gp.plan);
  g.name = captured.name;
  const VerifyResult v = verify_plan(g, p);
  if (!v.ok) throw Error(fmt::format("{}: invalid plan: {}", plan_path, v.violation));
  runtime::AtenProgram program = runtime::read_aten_program(exec_path, captured);
  if (p.data_parallel.active()) program = runtime::with_collectives(program, g);
  runtime::ValuesFile state = given ? std::move(*given) : runtime::read_values_file(values_path);
  runtime::check_values_against(state, g, values_path, program.storage_bytes);
  runtime::AtenOptions o;
  o.device = device;
  o.threads = threads;
  if (p.data_parallel.active()) o.all_reduce_mean = runtime::all_reduce_mean_buffer;
  return std::make_unique<AtenSession>(std::move(g), std::move(p), std::move(program),
                                       std::move(state), std::move(o), runtime::init_ranks());
}

// batch: (tensor id, an object with the buffer protocol) per input;
// scalars: the step's step scalars (Note [Step scalars]), or none.
struct Batch {
  std::vector<py::buffer_info> infos;
  std::vector<BatchValue> values;
};

Batch batch_values(const std::vector<std::tuple<int, py::buffer>>& batch) {
  Batch r;
  r.infos.reserve(batch.size());
  for (const auto& [tensor, buffer] : batch) {
    r.infos.push_back(buffer.request());
    const py::buffer_info& b = r.infos.back();
    r.values.push_back({tensor, std::span(static_cast<const std::byte*>(b.ptr),
                                          static_cast<size_t>(b.size * b.itemsize))});
  }
  return r;
}

double step(AtenSession& s, const std::vector<std::tuple<int, py::buffer>>& batch,
            const std::vector<double>& scalars) {
  const Batch b = batch_values(batch);
  py::gil_scoped_release unlocked;
  return s.step(b.values, scalars);
}

// AtenSession::begin: the bytes are copied before it returns.
void begin(AtenSession& s, const std::vector<std::tuple<int, py::buffer>>& batch) {
  const Batch b = batch_values(batch);
  py::gil_scoped_release unlocked;
  s.begin(b.values);
}

// Every persistent tensor: (tensor id, name, kind, bytes).
std::vector<std::tuple<int, std::string, std::string, py::bytes>> finish(AtenSession& s) {
  const runtime::ValuesFile* v = nullptr;
  {
    py::gil_scoped_release unlocked;
    v = &s.finish();
  }
  std::vector<std::tuple<int, std::string, std::string, py::bytes>> out;
  for (const runtime::TensorValue& t : v->tensors)
    out.emplace_back(t.tensor, t.name, t.kind,
                     py::bytes(reinterpret_cast<const char*>(t.data.data()), t.data.size()));
  return out;
}

// Per step, its wall time in us (the executor's iteration timing).
std::vector<double> step_wall_us(const AtenSession& s) {
  return s.result().iteration_wall_us;
}

}  // namespace

void bind_session(py::module_& m) {
  py::class_<AtenSession>(m, "Session")
      .def(py::init(&open_session), py::arg("graph"), py::arg("plan"), py::arg("exec"),
           py::arg("values"), py::arg("device") = "cpu", py::arg("threads") = 0)
      .def("step", &step, py::arg("batch"), py::arg("scalars") = std::vector<double>{})
      .def("begin", &begin, py::arg("batch"))
      .def(
          "end",
          [](AtenSession& s, const std::vector<double>& scalars) {
            py::gil_scoped_release unlocked;
            return s.end(scalars);
          },
          py::arg("scalars") = std::vector<double>{})
      .def(
          "abandon",
          [](AtenSession& s, const std::string& why) {
            py::gil_scoped_release unlocked;
            s.abandon(why);
          },
          py::arg("why"))
      .def("finish", &finish)
      .def_property_readonly("steps", &AtenSession::steps)
      .def_property_readonly("last_step_skipped", &AtenSession::last_step_skipped)
      .def_property_readonly("step_wall_us", &step_wall_us);
  // Data-parallel training under mpirun (Note [Ranks], Note [Rank failures]).
  m.def("init_ranks", [] {
    const runtime::RankInfo r = runtime::init_ranks();
    return std::make_pair(r.rank, r.size);
  });
  m.def("have_mpi", &runtime::have_mpi);
  m.def(
      "agree",
      [](const std::string& what, const std::optional<std::string>& error) {
        py::gil_scoped_release unlocked;
        runtime::agree(what, error ? std::make_exception_ptr(Error(*error)) : nullptr);
      },
      py::arg("what"), py::arg("error") = std::nullopt);
  m.def(
      "broadcast_text",
      [](const std::string& text) {
        py::gil_scoped_release unlocked;
        return runtime::broadcast_text(text);
      },
      py::arg("text"));
  m.def("abort_job", &runtime::abort_job, py::arg("status"));
  // Whether the ATen kernels load (a build with libtorch), and why not.
  m.def("aten_available", &runtime::aten_available);
  m.def("aten_unavailable_reason", &runtime::aten_unavailable_reason);
}

}  // namespace sa::python
