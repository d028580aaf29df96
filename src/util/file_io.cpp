#include "util/file_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <utility>

#include <fmt/format.h>
#include <zlib.h>

#include "util/error.h"
#include "util/units.h"

namespace sa {
namespace fs = std::filesystem;
namespace {

bool is_gzip(std::string_view data) {
  return data.size() >= 2 && static_cast<unsigned char>(data[0]) == 0x1f &&
         static_cast<unsigned char>(data[1]) == 0x8b;
}

std::string errno_text() {
  return std::strerror(errno);
}

[[noreturn]] void over_limit(const std::string& path, const char* what, int64_t max_bytes) {
  throw Error(fmt::format("{}: {} over {} (the limit for this input; not a swapadvisor file?)",
                          path, what, format_bytes(max_bytes)));
}

// Closes a file descriptor on every path out.
struct Fd {
  int fd = -1;
  explicit Fd(int f) : fd(f) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

// zlib counts in uInt (32 bits): feed a large input in slices.
void refill(z_stream& zs, std::string_view data, size_t& offset) {
  if (zs.avail_in != 0 || offset >= data.size()) return;
  const size_t n = std::min<size_t>(data.size() - offset, std::numeric_limits<uInt>::max());
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data() + offset));
  zs.avail_in = static_cast<uInt>(n);
  offset += n;
}

std::string gunzip(const std::string& path, std::string_view data, int64_t max_bytes) {
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
    const size_t n = sizeof buf - zs.avail_out;
    if (static_cast<int64_t>(out.size() + n) > max_bytes) {
      inflateEnd(&zs);
      over_limit(path, "decompresses to", max_bytes);
    }
    out.append(buf, n);
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

// Writes all of contents to fd; false with errno set on failure.
bool write_all(int fd, std::string_view contents) {
  while (!contents.empty()) {
    const ssize_t n = ::write(fd, contents.data(), contents.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n == 0) errno = EIO;
      return false;
    }
    contents.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

// The path a write to `path` lands on: path itself, or the final target of
// the symbolic links it names (which need not exist yet).
std::filesystem::path link_target(const std::string& path) {
  fs::path p = path;
  for (int hops = 0; hops < 40; ++hops) {
    std::error_code ec;
    if (!fs::is_symlink(fs::symlink_status(p, ec))) return p;
    const fs::path to = fs::read_symlink(p, ec);
    if (ec) throw Error(fmt::format("{}: cannot read the symbolic link: {}", path, ec.message()));
    p = to.is_absolute() ? to : p.parent_path() / to;
  }
  throw Error(path + ": too many levels of symbolic links");
}

// A new file beside target (in its directory, so that rename is atomic),
// opened for writing; its name in *tmp. The name does not grow with the
// target's: a target of 246 to 255 bytes, a valid name, had no room for a
// suffix ("File name too long").
int create_temporary(const std::string& target, std::string* tmp) {
  static std::atomic<unsigned> counter{0};
  const fs::path dir = fs::path(target).parent_path();
  for (int attempt = 0; attempt < 100; ++attempt) {
    *tmp = (dir / fmt::format(".swapadvisor-{}-{}.tmp", ::getpid(), counter++)).string();
    // 0666 less the umask, as a file created by the shell would be.
    const int fd = ::open(tmp->c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0 || errno != EEXIST) return fd;
  }
  errno = EEXIST;
  return -1;
}

}  // namespace

bool ends_with_gz(std::string_view path) {
  return path.size() >= 3 && path.substr(path.size() - 3) == ".gz";
}

std::string gunzip_if_gzip(std::string data, const std::string& origin, int64_t max_bytes) {
  if (is_gzip(data)) return gunzip(origin, data, max_bytes);
  if (static_cast<int64_t>(data.size()) > max_bytes) over_limit(origin, "is", max_bytes);
  return data;
}

std::string read_file(const std::string& path, int64_t max_bytes) {
  Fd in(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (in.fd < 0) throw Error(path + ": cannot open: " + errno_text());
  struct stat st {};
  if (::fstat(in.fd, &st) != 0) throw Error(path + ": cannot read: " + errno_text());
  if (S_ISDIR(st.st_mode)) throw Error(path + ": is a directory, not a file");
  std::string data;
  if (S_ISREG(st.st_mode)) {
    if (st.st_size > max_bytes) over_limit(path, "is", max_bytes);
    data.reserve(static_cast<size_t>(st.st_size));
  }
  // Also a pipe or a device: read until the end, or the limit.
  char buf[1 << 16];
  while (true) {
    const ssize_t n = ::read(in.fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw Error(path + ": read failed: " + errno_text());
    if (n == 0) break;
    if (static_cast<int64_t>(data.size()) + n > max_bytes) over_limit(path, "is", max_bytes);
    data.append(buf, static_cast<size_t>(n));
  }
  return gunzip_if_gzip(std::move(data), path, max_bytes);
}

void write_file(const std::string& path, std::string_view contents) {
  std::string packed;
  if (ends_with_gz(path)) {
    packed = gzip(path, contents);
    contents = packed;
  }
  const std::string target = link_target(path).string();
  struct stat st {};
  if (::stat(target.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    if (S_ISDIR(st.st_mode)) throw Error(path + ": is a directory, not a file");
    // A device, a FIFO or a socket: written into; replacing it would break it.
    // O_NONBLOCK: a FIFO that no one reads is an error (ENXIO), not a hang;
    // the writes then block as usual.
    Fd out(::open(target.c_str(), O_WRONLY | O_CLOEXEC | O_NONBLOCK));
    if (out.fd < 0 && errno == ENXIO && S_ISFIFO(st.st_mode))
      throw Error(path + ": cannot write: no process is reading this FIFO");
    if (out.fd < 0) throw Error(path + ": cannot open for writing: " + errno_text());
    const int flags = ::fcntl(out.fd, F_GETFL);
    if (flags < 0 || ::fcntl(out.fd, F_SETFL, flags & ~O_NONBLOCK) != 0)
      throw Error(path + ": cannot write: " + errno_text());
    if (!write_all(out.fd, contents)) throw Error(path + ": write failed: " + errno_text());
    return;
  }
  // Write beside the target and rename.
  std::string tmp;
  {
    Fd out(create_temporary(target, &tmp));
    if (out.fd < 0) throw Error(path + ": cannot open for writing: " + errno_text());
    if (!write_all(out.fd, contents) || ::close(std::exchange(out.fd, -1)) != 0) {
      const std::string why = errno_text();
      std::remove(tmp.c_str());
      throw Error(path + ": write failed: " + why);
    }
  }
  if (std::rename(tmp.c_str(), target.c_str()) != 0) {
    const std::string why = errno_text();
    std::remove(tmp.c_str());
    throw Error(path + ": cannot rename temporary file: " + why);
  }
}

}  // namespace sa
