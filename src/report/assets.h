#pragma once
// The report page's template, style sheet and script: src/report/assets,
// embedded at build time (src/report/CMakeLists.txt generates assets.cpp).

#include <string_view>

namespace sa::report_assets {

extern const std::string_view kHtml;  // assets/report.html: {{title}} {{css}} {{data}} {{js}}
extern const std::string_view kCss;   // assets/report.css
extern const std::string_view kJs;    // assets/report.js

}  // namespace sa::report_assets
