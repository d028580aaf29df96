#pragma once
// The HTML report: one self-contained page (no network access needed) that
// shows a plan: the summary, the comparison of methods, a zoomable timeline
// of the three streams, device memory over time against the budget, the
// tensors that moved the most bytes and where compute stalled. docs/report.md
// describes it.
//
//   sa::ReportInput in{.graph = g, .device = d, .budget = b, ..., .methods = results};
//   sa::write_report(in, "report.html");
//
// The page is assets/report.html with assets/report.css, assets/report.js
// (embedded at build time) and the data of report_data.h filled in.

#include <string>

#include "report/report_input.h"

namespace sa {

std::string render_report(const ReportInput& in);
void write_report(const ReportInput& in, const std::string& path);

}  // namespace sa
