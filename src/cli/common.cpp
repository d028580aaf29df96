#include "cli/common.h"

#include <limits>

#include <fmt/format.h>

#include "cli/options.h"
#include "util/suggest.h"
#include "util/terminal.h"

namespace sa::cli {

void add_source_options(CLI::App* app, GraphSource* source) {
  app->add_option("file", source->file, "graph file in format v1 (.json or .json.gz)");
  add_model_options(app, source);
}

void add_model_options(CLI::App* app, GraphSource* source) {
  app->add_option("--model", source->model,
                  "zoo model name instead of a file (see `swapadvisor zoo --list`)");
  app->add_option("--batch", source->batch, "batch size for --model")->check(positive_int());
  app->add_option("--optimizer", source->optimizer,
                  "optimizer for --model: sgd (with momentum), sgd-plain or adam")
      ->check(CLI::IsMember({"sgd", "sgd-plain", "adam"}));
  app->add_option("--seq-len", source->seq_len, "sequence length for sequence models (--model)")
      ->check(positive_int());
  add_precision_option(app, &source->precision);
}

void add_precision_option(CLI::App* app, std::string* precision) {
  app->add_option("--precision", *precision,
                  "for --model: fp32, or automatic mixed precision bf16 or fp16 (docs/zoo.md)")
      ->check(CLI::IsMember({"fp32", "bf16", "fp16"}));
}

CLI::Validator positive_int() {
  return integer_in(1, std::numeric_limits<int>::max());
}

std::string describe_parse_error(CLI::App& app, const CLI::ParseError& e) {
  // The subcommand being parsed: the deepest one CLI11 entered.
  CLI::App* cmd = &app;
  while (!cmd->get_subcommands().empty())
    cmd = cmd->get_subcommands().front();
  std::vector<std::string> names;
  if (cmd == &app) {
    for (const CLI::App* sub : app.get_subcommands({}))
      names.push_back(sub->get_name());
  }
  for (const CLI::Option* o : cmd->get_options()) {
    for (const std::string& l : o->get_lnames())
      names.push_back("--" + l);
    for (const std::string& s : o->get_snames())
      names.push_back("-" + s);
  }
  std::string hint;
  for (const std::string& word : cmd->remaining()) {
    const std::string key = word.substr(0, word.find('='));
    if (cmd != &app && key.rfind('-', 0) != 0) continue;  // a stray value, not a flag
    if (const auto near = closest(key, names)) {
      hint = fmt::format("; did you mean '{}'?", *near);
      break;
    }
  }
  const std::string where = cmd == &app ? "" : cmd->get_name() + ": ";
  const std::string help =
      cmd == &app ? "swapadvisor --help" : "swapadvisor " + cmd->get_name() + " --help";
  return fmt::format("swapadvisor: error: {}{}{}\n(`{}` lists the options)", where,
                     terminal_message(e.what()), terminal_message(hint), help);
}

void print_warnings(const std::vector<std::string>& warnings) {
  for (const auto& w : warnings)
    fmt::print(stderr, "swapadvisor: warning: {}\n", terminal_message(w));
}

}  // namespace sa::cli
