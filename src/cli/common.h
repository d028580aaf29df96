#pragma once
// Options shared by the subcommands: where the graph comes from (a file, or a
// zoo model) and which device it runs on.

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cost/device.h"
#include "graph/graph.h"
#include "plan/plan.h"

namespace sa::cli {

struct GraphSource {
  std::string file;
  std::string model;
  int batch = 0;
  std::string optimizer = "sgd";
  int seq_len = 0;
  std::string precision = "fp32";

  // Adds FILE (positional, optional) and --model/--batch/--optimizer/--seq-len/
  // --precision.
  void add_options(CLI::App* app);
  // The same without the positional FILE (verify and run take GRAPH PLAN).
  void add_model_options(CLI::App* app);
  // From the positionals of `CMD GRAPH PLAN` or `CMD --model NAME ... PLAN`:
  // takes the graph file (when no --model) and returns the plan's path.
  std::string take_graph_and_plan(const std::vector<std::string>& files);
  // Reads the file or builds the zoo model; throws sa::Error with a clear
  // message when neither or both were given.
  Graph load() const;
};

// --precision fp32|bf16|fp16 (zoo and every command with --model).
void add_precision_option(CLI::App* app, std::string* precision);

// A plan file and the graph it plans: a data-parallel plan (its
// data_parallel field) plans data_parallel_graph() of the graph given, with
// its collectives timed on `device`; any other plan the graph itself.
struct GraphAndPlan {
  Graph graph;
  Plan plan;
};
GraphAndPlan read_graph_and_plan(Graph g, const std::string& plan_path,
                                 const DeviceProfile& device);

// An int option's check: 1 to INT_MAX (--batch, --seq-len).
CLI::Validator positive_int();

// A command-line error as the user sees it: "swapadvisor: error: plan:
// ...", with the closest option (or subcommand) to one that was not
// expected, and where to find the options.
std::string describe_parse_error(CLI::App& app, const CLI::ParseError& e);

// Prints each warning on stderr as "swapadvisor: warning: ...".
void print_warnings(const std::vector<std::string>& warnings);

// Registration of each subcommand (one file each).
void register_stats(CLI::App& app);
void register_zoo(CLI::App& app);
void register_plan(CLI::App& app);
void register_compare(CLI::App& app);
void register_sweep(CLI::App& app);
void register_verify(CLI::App& app);
void register_report(CLI::App& app);
void register_run(CLI::App& app);
void register_bandwidth(CLI::App& app);

}  // namespace sa::cli
