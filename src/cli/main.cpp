// swapadvisor: plan, simulate, verify and run swap plans for training deep
// learning models that do not fit in GPU memory.

#include <exception>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "cli/common.h"
#include "util/error.h"

int main(int argc, char** argv) {
  CLI::App app{"swapadvisor: train models larger than GPU memory by planning tensor swaps"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "swapadvisor 0.1.0");
  sa::cli::register_stats(app);
  sa::cli::register_zoo(app);
  sa::cli::register_plan(app);
  sa::cli::register_compare(app);
  sa::cli::register_sweep(app);
  sa::cli::register_verify(app);
  sa::cli::register_report(app);
  sa::cli::register_run(app);
  sa::cli::register_bandwidth(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const sa::Error& e) {
    fmt::print(stderr, "swapadvisor: error: {}\n", e.what());
    return 1;
  } catch (const std::bad_alloc&) {
    fmt::print(stderr, "swapadvisor: error: out of memory\n");
    return 1;
  } catch (const std::exception& e) {
    fmt::print(stderr, "swapadvisor: internal error: {}\n", e.what());
    return 2;
  }
  return 0;
}
