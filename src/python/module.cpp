// swapadvisor._native: the planning commands of the command line as Python
// functions; python/swapadvisor/__init__.py is their interface. Each call
// returns the JSON text of the command's --json object, built by the same
// function the command line prints (api/), which the package reads with
// json.loads: the field names have one source of truth.
//
// Every C++ exception becomes swapadvisor.Error, a ValueError (errors.h);
// for sa::Error (a user's mistake: a bad file, a budget too small) its
// message is the one the command line prints after "swapadvisor: error: ".
// The GIL is released while a call loads, searches and simulates, so other
// Python threads run meanwhile.

#include <string>
#include <tuple>
#include <vector>

#include <fmt/format.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "api/planning.h"
#include "api/results.h"
#include "api/source.h"
#include "api/stats.h"
#include "methods/sweep.h"
#include "plan/plan.h"
#include "plan/plan_io.h"
#include "plan/verify.h"
#include "python/bindings.h"
#include "python/errors.h"
#include "util/error.h"
#include "util/file_io.h"
#include "util/limits.h"
#include "util/units.h"

namespace py = pybind11;

namespace sa::python {
namespace {

using Warnings = std::vector<std::string>;

// The JSON text and the warnings a command line would print on stderr.
std::tuple<std::string, Warnings> stats(const api::GraphSource& source, const std::string& device) {
  py::gil_scoped_release unlocked;
  const Graph g = source.load();
  const api::GraphSummary s = api::summarize_graph(g, load_device(device));
  return {api::stats_json(s).dump(), s.warnings};
}

// With the plan file's text, as `plan -o FILE` writes it.
std::tuple<std::string, Warnings, std::string> plan(const api::PlanningArgs& args,
                                                    const std::string& method) {
  py::gil_scoped_release unlocked;
  const api::PlanningInputs in = api::load_planning_inputs(args);
  const Problem problem(in.graph, in.device, in.budget, args.compute_scale, in.dp, in.host_budget);
  const MethodResult r = run_method(method, problem, api::method_options(args));
  if (!r.feasible) throw Error(fmt::format("{} cannot plan within the budget: {}", r.name, r.why));
  return {api::plan_json(in, problem, r).dump(), problem.warnings, plan_to_json(in.graph, r.plan)};
}

std::tuple<std::string, Warnings> compare(const api::PlanningArgs& args) {
  py::gil_scoped_release unlocked;
  const api::PlanningInputs in = api::load_planning_inputs(args);
  const Problem problem(in.graph, in.device, in.budget, args.compute_scale, in.dp, in.host_budget);
  const api::Comparison c = api::compare_methods(in, problem, api::method_options(args));
  return {api::compare_json(in, problem, c).dump(), problem.warnings};
}

std::string sweep(const api::SweepArgs& args) {
  py::gil_scoped_release unlocked;
  const api::SweepSetup s = api::prepare_sweep(args);
  return api::sweep_json(s.in, s.options, sa::sweep(s.in.graph, s.in.device, s.options)).dump();
}

// The plan from a file (plan_text empty) or from its text (origin names it).
std::string verify(const api::GraphSource& source, const std::string& origin,
                   const std::string& plan_text) {
  py::gil_scoped_release unlocked;
  // The device only times a data-parallel plan's collectives: not checked here.
  const DeviceProfile device = load_device("v100-16gb");
  const auto [g, p] = plan_text.empty()
                          ? api::read_graph_and_plan(source.load(), origin, device)
                          : api::parse_graph_and_plan(source.load(), plan_text, origin, device);
  const VerifyResult v = verify_plan(g, p);
  if (!v.ok) throw Error(fmt::format("{}: invalid plan: {}", origin, v.violation));
  return api::verify_json(g, p, source.file.empty() ? source.model : source.file).dump();
}

}  // namespace
}  // namespace sa::python

PYBIND11_MODULE(_native, m) {
  using sa::api::GraphSource;
  using sa::api::PlanningArgs;
  using sa::api::SweepArgs;
  m.doc() = "swapadvisor's C++ planner; use the swapadvisor package, not this module";
  sa::python::register_errors(m);
  sa::python::bind_session(m);  // swapadvisor.Trainer's runs

  py::class_<GraphSource>(m, "GraphSource")
      .def(py::init<>())
      .def_readwrite("file", &GraphSource::file)
      .def_readwrite("model", &GraphSource::model)
      .def_readwrite("batch", &GraphSource::batch)
      .def_readwrite("optimizer", &GraphSource::optimizer)
      .def_readwrite("seq_len", &GraphSource::seq_len)
      .def_readwrite("precision", &GraphSource::precision);
  py::class_<PlanningArgs>(m, "PlanningArgs")
      .def(py::init<>())
      .def_readwrite("source", &PlanningArgs::source)
      .def_readwrite("device", &PlanningArgs::device)
      .def_readwrite("memory", &PlanningArgs::memory)
      .def_readwrite("memory_fraction", &PlanningArgs::memory_fraction)
      .def_readwrite("time_budget_s", &PlanningArgs::time_budget_s)
      .def_readwrite("evaluations", &PlanningArgs::evaluations)
      .def_readwrite("threads", &PlanningArgs::threads)
      .def_readwrite("seed", &PlanningArgs::seed)
      .def_readwrite("compute_scale", &PlanningArgs::compute_scale)
      .def_readwrite("copy_order", &PlanningArgs::copy_order)
      .def_readwrite("allocator", &PlanningArgs::allocator)
      .def_readwrite("arena_layout", &PlanningArgs::arena_layout)
      .def_readwrite("no_recompute", &PlanningArgs::no_recompute)
      .def_readwrite("data_parallel", &PlanningArgs::data_parallel)
      .def_readwrite("shard_optimizer", &PlanningArgs::shard_optimizer)
      .def_readwrite("any_budget", &PlanningArgs::any_budget)
      .def_readwrite("quiet", &PlanningArgs::quiet);
  py::class_<SweepArgs>(m, "SweepArgs")
      .def(py::init<>())
      .def_readwrite("planning", &SweepArgs::planning)
      .def_readwrite("points", &SweepArgs::points)
      .def_readwrite("target", &SweepArgs::target);

  m.def("stats", &sa::python::stats, py::arg("source"), py::arg("device"));
  m.def("plan", &sa::python::plan, py::arg("args"), py::arg("method"));
  m.def("compare", &sa::python::compare, py::arg("args"));
  m.def("sweep", &sa::python::sweep, py::arg("args"));
  m.def("verify", &sa::python::verify, py::arg("source"), py::arg("origin"), py::arg("plan_text"));
  m.def("method_names", &sa::method_names);
  // A size as --memory reads it ("8GiB", "1.5GB", "4096"), or None.
  m.def("parse_bytes", [](const std::string& text) { return sa::parse_bytes(text); });
  // A plan's save(): as `plan -o` writes (replaced whole; .gz compressed).
  m.def("write_file", [](const std::string& path, const std::string& text) {
    py::gil_scoped_release unlocked;
    sa::write_file(path, text);
  });

  // The command line's limits, for the package's checks of its arguments.
  m.attr("MAX_TIME_BUDGET_S") = sa::api::kMaxTimeBudgetS;
  m.attr("MAX_THREADS") = sa::kMaxThreads;
  m.attr("MAX_RANKS") = sa::kMaxRanks;
  m.attr("DEFAULT_ALLOCATOR") = std::string(sa::to_string(sa::kDefaultAllocator));
  m.attr("__version__") = SA_VERSION;
}
