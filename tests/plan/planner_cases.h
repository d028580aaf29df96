#pragma once
// Shared by the verifier's tests and the planner's property tests: the test
// seed, random topological orders and budgets, and plan_and_verify, which
// runs the swap planner on a graph in every configuration and checks that
// each plan verifies and simulates.
//
// The random tests print their seed; rerun with SA_TEST_SEED=<seed> to
// reproduce a failure.

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "cost/device.h"
#include "graph/dataflow.h"
#include "graph/graph.h"
#include "plan/allocation.h"
#include "plan/plan.h"

namespace sa::testing {

// SA_TEST_SEED, or a fixed default; printed once.
uint64_t test_seed();

DeviceProfile slow_link();  // 1 byte per microsecond: copies matter

// A random topological order: Kahn's algorithm with a random ready op.
std::vector<OpId> random_order(const Dataflow& df, std::mt19937_64& rng);

// The smallest budget default_allocation accepts: the minimum counts of one
// class per size.
int64_t min_feasible_budget(const Graph& g, const SizeTable& t);

struct PlannedCase {
  std::string label;  // how to reproduce it
  Plan plan;
};

struct Tally {
  int planned = 0;
  int failures = 0;
  int recompute_steps = 0;  // in the plans with recompute genes
  int replay_steps = 0;     // of them, replays of in-place updates (Note [Update replay])
  int state_skips = 0;      // of them, ops run without their updates (recompute_skips_updates)
  int repaired = 0;         // plans made without a recompute that found no memory
  void print(const char* what, uint64_t seed) const;
};

// Verifies p; a violation is a test failure that names the case.
bool verify_case(const Graph& g, const Plan& p, const std::string& what, Tally* tally);

// Plans graph g (made with `label`) with a random order and budget and every
// eviction policy, steady-state setting and copy order; every plan must verify and
// simulate. Appends some of the verified plans to *out when given.
void plan_and_verify(const Graph& g, const std::string& label, std::mt19937_64& rng,
                     std::vector<PlannedCase>* out, Tally* tally);

}  // namespace sa::testing
