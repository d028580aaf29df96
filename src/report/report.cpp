#include "report/report.h"

#include <fmt/format.h>

#include "report/assets.h"
#include "report/html.h"
#include "report/report_data.h"
#include "util/error.h"
#include "util/file_io.h"

namespace sa {

std::string render_report(const ReportInput& in) {
  const std::string title = fmt::format("{}: swapadvisor report ({} on {})", in.graph.name,
                                        in.methods[in.main].name, in.device.name);
  const std::pair<std::string_view, std::string> fills[] = {
      {"{{title}}", escape_html(title)},
      {"{{css}}", std::string(report_assets::kCss)},
      {"{{data}}", script_json(report_data_json(in))},
      {"{{js}}", std::string(report_assets::kJs)},
  };
  // The placeholders appear once each, in this order; what is filled in is
  // never searched again.
  const std::string_view page = report_assets::kHtml;
  std::string out;
  size_t at = 0;
  for (const auto& [key, value] : fills) {
    const size_t k = page.find(key, at);
    SA_CHECK(k != std::string_view::npos, "report template lacks {}", key);
    out.append(page.substr(at, k - at));
    out += value;
    at = k + key.size();
  }
  out.append(page.substr(at));
  return out;
}

void write_report(const ReportInput& in, const std::string& path) {
  write_file(path, render_report(in));
}

}  // namespace sa
