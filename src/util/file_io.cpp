#include "util/file_io.h"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>

#include <zlib.h>

#include "util/error.h"

namespace sa {
namespace {

bool is_gzip(std::string_view data) {
  return data.size() >= 2 && static_cast<unsigned char>(data[0]) == 0x1f &&
         static_cast<unsigned char>(data[1]) == 0x8b;
}

// Larger decompressed data is refused rather than risking memory exhaustion
// on a gzip bomb; a graph file is far smaller (a 30,000-op graph is ~6 MB).
constexpr uint64_t kMaxGunzipBytes = uint64_t{4} << 30;

// zlib counts in uInt (32 bits): feed a large input in slices.
void refill(z_stream& zs, std::string_view data, size_t& offset) {
  if (zs.avail_in != 0 || offset >= data.size()) return;
  const size_t n = std::min<size_t>(data.size() - offset, std::numeric_limits<uInt>::max());
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data() + offset));
  zs.avail_in = static_cast<uInt>(n);
  offset += n;
}

std::string gunzip(const std::string& path, std::string_view data) {
  z_stream zs{};
  // 16 + MAX_WBITS: expect a gzip header; concatenated members are handled by
  // the loop below resetting the stream.
  if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK) throw Error(path + ": cannot start gzip decoder");
  std::string out;
  size_t offset = 0;
  refill(zs, data, offset);
  char buf[1 << 16];
  int rc = Z_OK;
  auto fail = [&](const std::string& what) {
    inflateEnd(&zs);
    throw Error(path + ": " + what);
  };
  while (true) {
    zs.next_out = reinterpret_cast<Bytef*>(buf);
    zs.avail_out = sizeof buf;
    rc = inflate(&zs, Z_NO_FLUSH);
    out.append(buf, sizeof buf - zs.avail_out);
    if (out.size() > kMaxGunzipBytes)
      fail("decompressed data is over 4 GiB; refusing to read further (not a graph file?)");
    refill(zs, data, offset);
    if (rc == Z_STREAM_END) {
      if (zs.avail_in == 0) break;
      inflateReset(&zs);  // another gzip member follows
      continue;
    }
    if (rc == Z_BUF_ERROR) {
      // No progress: the input ran out (refill() loaded any that was left).
      if (zs.avail_in == 0)
        fail("truncated gzip data (the file ends inside the compressed stream)");
      continue;
    }
    if (rc != Z_OK) fail(std::string("corrupt gzip data: ") + (zs.msg ? zs.msg : "unknown error"));
  }
  inflateEnd(&zs);
  return out;
}

std::string gzip(const std::string& path, std::string_view data) {
  z_stream zs{};
  if (deflateInit2(&zs, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    throw Error(path + ": cannot start gzip encoder");
  std::string out;
  size_t offset = 0;
  char buf[1 << 16];
  int rc = Z_OK;
  do {
    refill(zs, data, offset);
    const int flush = offset == data.size() ? Z_FINISH : Z_NO_FLUSH;
    zs.next_out = reinterpret_cast<Bytef*>(buf);
    zs.avail_out = sizeof buf;
    rc = deflate(&zs, flush);
    if (rc == Z_STREAM_ERROR) break;
    out.append(buf, sizeof buf - zs.avail_out);
  } while (rc != Z_STREAM_END);
  deflateEnd(&zs);
  if (rc != Z_STREAM_END) throw Error(path + ": gzip compression failed");
  return out;
}

}  // namespace

bool ends_with_gz(std::string_view path) {
  return path.size() >= 3 && path.substr(path.size() - 3) == ".gz";
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot open: " + std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw Error(path + ": read failed");
  std::string data = std::move(ss).str();
  if (is_gzip(data)) return gunzip(path, data);
  return data;
}

void write_file(const std::string& path, std::string_view contents) {
  std::string packed;
  if (ends_with_gz(path)) {
    packed = gzip(path, contents);
    contents = packed;
  }
  // Write beside the target and rename, so that a failed write never leaves
  // a half-written file where a good one was.
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw Error(path + ": cannot open for writing: " + std::strerror(errno));
    out.write(contents.data(), static_cast<std::streamsize>(contents.size()));
    out.flush();
    if (!out) throw Error(path + ": write failed: " + std::strerror(errno));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw Error(path + ": cannot rename temporary file: " + std::strerror(errno));
  }
}

}  // namespace sa
