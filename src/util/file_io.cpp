#include "util/file_io.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include <zlib.h>

#include "util/error.h"

namespace sa {
namespace {

bool is_gzip(std::string_view data) {
  return data.size() >= 2 && static_cast<unsigned char>(data[0]) == 0x1f &&
         static_cast<unsigned char>(data[1]) == 0x8b;
}

std::string gunzip(const std::string& path, std::string_view data) {
  z_stream zs{};
  // 16 + MAX_WBITS: expect a gzip header; concatenated members are handled by
  // the loop below resetting the stream.
  if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK) throw Error(path + ": cannot start gzip decoder");
  std::string out;
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(data.size());
  char buf[1 << 16];
  int rc = Z_OK;
  while (true) {
    zs.next_out = reinterpret_cast<Bytef*>(buf);
    zs.avail_out = sizeof buf;
    rc = inflate(&zs, Z_NO_FLUSH);
    out.append(buf, sizeof buf - zs.avail_out);
    if (rc == Z_STREAM_END) {
      if (zs.avail_in == 0) break;
      inflateReset(&zs);  // another gzip member follows
      continue;
    }
    if (rc == Z_BUF_ERROR && zs.avail_in == 0) {
      inflateEnd(&zs);
      throw Error(path + ": truncated gzip data (the file ends inside the compressed stream)");
    }
    if (rc != Z_OK) {
      std::string msg = zs.msg ? zs.msg : "unknown error";
      inflateEnd(&zs);
      throw Error(path + ": corrupt gzip data: " + msg);
    }
  }
  inflateEnd(&zs);
  return out;
}

std::string gzip(const std::string& path, std::string_view data) {
  z_stream zs{};
  if (deflateInit2(&zs, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    throw Error(path + ": cannot start gzip encoder");
  std::string out;
  out.resize(deflateBound(&zs, static_cast<uLong>(data.size())) + 64);
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(data.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  int rc = deflate(&zs, Z_FINISH);
  deflateEnd(&zs);
  if (rc != Z_STREAM_END) throw Error(path + ": gzip compression failed");
  out.resize(zs.total_out);
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
