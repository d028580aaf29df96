// swapadvisor: plan, simulate, verify and run swap plans for training deep
// learning models that do not fit in GPU memory.
//
// Exit status: 0 on success; 1 for an error the user can fix (a bad file, a
// bad option, an impossible budget, not enough memory for the input); 2 for
// an internal error, a bug in swapadvisor (util/error.h).

#include <exception>
#include <new>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "cli/common.h"
#include "util/error.h"
#include "util/terminal.h"

int main(int argc, char** argv) {
  CLI::App app{"swapadvisor: train models larger than GPU memory by planning tensor swaps"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "swapadvisor " SA_VERSION);
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
    // Help and version text are CLI11's to print; every other parse error
    // is a bad command line: a user error, said as the others are.
    if (e.get_exit_code() == 0) return app.exit(e);
    fmt::print(stderr, "{}\n", sa::cli::describe_parse_error(app, e));
    return 1;
  } catch (const sa::Error& e) {
    // Messages quote names and paths from files: Note [Names on a terminal].
    fmt::print(stderr, "swapadvisor: error: {}\n", sa::terminal_message(e.what()));
    return 1;
  } catch (const std::bad_alloc&) {
    fmt::print(stderr,
               "swapadvisor: error: out of memory: the input needs more memory than this "
               "machine let swapadvisor have\n");
    return 1;
  } catch (const sa::InternalError& e) {
    fmt::print(stderr, "swapadvisor: {}\n", sa::terminal_message(e.what()));
    return 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "swapadvisor: internal error (a bug in swapadvisor): {}\n",
               sa::terminal_message(e.what()));
    return 2;
  }
  return 0;
}
