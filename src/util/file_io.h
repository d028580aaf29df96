#pragma once
// Whole-file reads and writes, gzip-aware: a file is gunzipped on read when it
// starts with the gzip magic bytes (whatever its name), and gzipped on write
// when its name ends in ".gz". Failures throw sa::Error naming the file.

#include <string>
#include <string_view>

namespace sa {

std::string read_file(const std::string& path);
void write_file(const std::string& path, std::string_view contents);
bool ends_with_gz(std::string_view path);

}  // namespace sa
