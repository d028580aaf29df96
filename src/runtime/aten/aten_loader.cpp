// Loads the ATen kernel plugin (Note [ATen plugin], runtime/aten/aten_kernels.h).

#include <dlfcn.h>

#include <filesystem>
#include <mutex>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "runtime/aten/aten_kernels.h"
#include "util/error.h"

namespace sa::runtime {
namespace {

constexpr const char* kPluginName = "libswapadvisor_aten.so";

struct Loaded {
  const AtenPlugin* plugin = nullptr;
  std::string reason;  // why plugin is null
};

std::vector<std::string> candidates() {
  std::vector<std::string> out;
  if (const char* env = std::getenv("SA_ATEN_PLUGIN"); env && *env) {
    out.emplace_back(env);
    return out;  // an explicit choice is the only one tried
  }
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) out.push_back((exe.parent_path() / kPluginName).string());
#ifdef SA_ATEN_PLUGIN_PATH
  out.emplace_back(SA_ATEN_PLUGIN_PATH);
#endif
  return out;
}

Loaded load() {
  Loaded r;
  std::string tried;
  for (const std::string& path : candidates()) {
    if (!std::filesystem::exists(path)) {
      tried += fmt::format("\n  {}: not found", path);
      continue;
    }
    // RTLD_LOCAL: libtorch's symbols stay out of the program's namespace.
    // Never closed: libtorch registers its operators for the process's life.
    void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      tried += fmt::format("\n  {}: {}", path, dlerror());
      continue;
    }
    using Entry = const AtenPlugin* (*)();
    auto entry = reinterpret_cast<Entry>(dlsym(h, "sa_aten_plugin"));
    const AtenPlugin* p = entry ? entry() : nullptr;
    if (!p || p->abi != kAtenPluginAbi || std::string(p->version) != SA_VERSION || !p->make) {
      tried += fmt::format("\n  {}: not a plugin of this build (swapadvisor {}, plugin ABI {})",
                           path, SA_VERSION, kAtenPluginAbi);
      continue;
    }
    r.plugin = p;
    return r;
  }
#ifdef SA_ATEN_PLUGIN_PATH
  r.reason = fmt::format("the ATen kernel plugin ({}) did not load:{}", kPluginName, tried);
#else
  r.reason = fmt::format(
      "swapadvisor was built without libtorch, so it has no ATen kernel plugin (on Debian: "
      "apt-get install libtorch-dev, then re-run cmake; SA_WITH_TORCH){}",
      tried.empty() ? "" : "; tried:" + tried);
#endif
  return r;
}

const Loaded& loaded() {
  static const Loaded l = load();
  return l;
}

}  // namespace

bool aten_available() {
  return loaded().plugin != nullptr;
}

std::string aten_unavailable_reason() {
  return loaded().reason;
}

std::string aten_torch_version() {
  const Loaded& l = loaded();
  return l.plugin ? l.plugin->torch_version : "";
}

bool same_torch_release(std::string_view captured, std::string_view kernels) {
  // "major.minor." of each: the text up to the second dot
  auto release = [](std::string_view v) {
    const size_t dot = v.find('.');
    if (dot == std::string_view::npos) return v;
    return v.substr(0, v.find('.', dot + 1));
  };
  return !captured.empty() && release(captured) == release(kernels);
}

std::unique_ptr<AtenKernels> make_aten_kernels(const Graph& g, const AtenProgram& p,
                                               const AtenOptions& o) {
  const Loaded& l = loaded();
  if (!l.plugin) throw Error("--kernels aten: " + l.reason);
  return l.plugin->make(g, p, o);
}

}  // namespace sa::runtime
