#include "fuzz_common.h"

#include <nlohmann/json.hpp>

#include "util/json.h"

namespace sa::fuzz {

const std::string& data_dir() {
  static const std::string dir = [] {
    const char* env = std::getenv("SA_FUZZ_DATA");
    return std::string(env && *env ? env : SA_FUZZ_DATA);
  }();
  return dir;
}

std::string graph_name(const std::string& text) {
  try {
    const nlohmann::json doc = parse_json(text, "fuzz");
    const nlohmann::json* g = FieldReader::find(doc, "graph");
    const nlohmann::json* n = g ? FieldReader::find(*g, "name") : nullptr;
    if (n && n->is_string()) return n->get<std::string>();
  } catch (const Error&) {
  }
  return "";
}

}  // namespace sa::fuzz
