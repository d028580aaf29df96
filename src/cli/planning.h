#pragma once
// The planning options of plan, compare, sweep and report on the command
// line; what they mean, and the problem they give, are api/planning.h's.

#include <CLI/CLI.hpp>

#include "api/planning.h"
#include "cli/common.h"

namespace sa::cli {

using api::describe_budget;
using api::kMaxTimeBudgetS;
using api::load_planning_inputs;
using api::method_options;
using api::PlanningArgs;
using api::PlanningInputs;

// Adds FILE, the model options (add_source_options), --device, the budget,
// the search options, --quiet and --json.
void add_planning_options(CLI::App* app, PlanningArgs* args);

}  // namespace sa::cli
