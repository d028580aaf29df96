#pragma once
// Options shared by the subcommands: where the graph comes from (a file, or a
// zoo model; api/source.h), and how errors and warnings are printed.

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "api/source.h"

namespace sa::cli {

using api::GraphAndPlan;
using api::GraphSource;
using api::read_graph_and_plan;

// Adds FILE (positional, optional) and the model options.
void add_source_options(CLI::App* app, GraphSource* source);
// --model, --batch, --optimizer, --seq-len and the precision option, without the positional
// FILE (verify and run take GRAPH PLAN).
void add_model_options(CLI::App* app, GraphSource* source);

// --precision fp32|bf16|fp16 (zoo and every command with --model).
void add_precision_option(CLI::App* app, std::string* precision);

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
