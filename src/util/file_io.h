#pragma once
// Whole-file reads and writes, gzip-aware: a file is gunzipped on read when it
// starts with the gzip magic bytes (whatever its name), and gzipped on write
// when its name ends in ".gz". Failures throw sa::Error naming the file.

#include <cstdint>
#include <string>
#include <string_view>

#include "util/limits.h"

namespace sa {

// The file's contents, gunzipped when they are gzip data. A directory, a
// file over max_bytes or gzip data that inflates past max_bytes is an error,
// found before that much is allocated (Note [Input limits], util/limits.h).
std::string read_file(const std::string& path, int64_t max_bytes = kMaxJsonInputBytes);

// data gunzipped when it starts with the gzip magic bytes, else data itself;
// origin names the source in errors. read_file() without the file.
std::string gunzip_if_gzip(std::string data, const std::string& origin,
                           int64_t max_bytes = kMaxJsonInputBytes);

// Writes contents to path (every command's -o). A regular file is replaced
// whole (written beside it, then renamed over it), so that a failed write
// never leaves a half-written file where a good one was. A symbolic link is
// followed: its target is written and the link stays. A device or a FIFO
// (/dev/stdout, /dev/null) is written into, never replaced; a directory is an
// error.
void write_file(const std::string& path, std::string_view contents);

bool ends_with_gz(std::string_view path);

}  // namespace sa
