#include "runtime/nvme/nvme_file.h"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/mount.h>  // BLKGETSIZE64 (linux/fs.h clashes with it)
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <system_error>

#include <fmt/format.h>

#include "util/error.h"
#include "util/units.h"

namespace sa::runtime {

std::string errno_text(int err) {
  return std::system_category().message(err);
}

namespace {

bool nvme_disk_full(int err) {
  return err == ENOSPC || err == EFBIG || err == EDQUOT;
}

std::string nvme_parent_dir(const std::string& path) {
  const std::string p = std::filesystem::path(path).parent_path().string();
  return p.empty() ? "." : p;
}

}  // namespace

NvmeFile::NvmeFile(const std::string& path, int64_t capacity_bytes, bool must_create)
    : path_(path), capacity_(capacity_bytes) {
  if (capacity_ <= 0)
    throw Error(
        fmt::format("{}: the NVMe store's capacity must be positive, got {}", path_, capacity_));
  try {
    open_or_create(must_create);
    check_kind();
    enable_direct_io();
    reserve();
  } catch (...) {
    close_and_remove();
    throw;
  }
}

NvmeFile::~NvmeFile() {
  close_and_remove();
}

void NvmeFile::open_or_create(bool must_create) {
  // O_EXCL tells a file we create from one that was there: only ours is
  // removed at the end. O_NOFOLLOW: a link at the path is refused, not
  // followed (it fails O_EXCL with EEXIST, then the open below with ELOOP).
  fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd_ >= 0) {
    created_ = true;
    return;
  }
  int err = errno;
  if (err == EEXIST) {
    struct stat st {};
    if (::lstat(path_.c_str(), &st) == 0 && S_ISLNK(st.st_mode))
      throw Error(fmt::format(
          "{}: is a symbolic link; give the NVMe file's own path (the store does not follow "
          "links: it removes the files it creates)",
          path_));
    if (::lstat(path_.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
      throw Error(fmt::format("{}: is a directory; give the path of a file in it", path_));
    if (must_create)
      throw Error(fmt::format(
          "{}: already exists; give a path that does not exist (the measurement writes over "
          "the whole file and removes it afterwards)",
          path_));
    fd_ = ::open(path_.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW);
    if (fd_ >= 0) return;
    err = errno;
  }
  if (err == ENOENT)
    throw Error(fmt::format("{}: cannot create the NVMe file: the directory {} does not exist ({})",
                            path_, nvme_parent_dir(path_), errno_text(err)));
  if (err == ELOOP)
    throw Error(fmt::format("{}: is a symbolic link; give the NVMe file's own path ({})", path_,
                            errno_text(err)));
  if (err == EISDIR)
    throw Error(fmt::format("{}: is a directory; give the path of a file in it", path_));
  throw Error(fmt::format("{}: cannot open the NVMe file: {}", path_, errno_text(err)));
}

void NvmeFile::check_kind() {
  struct stat st {};
  if (::fstat(fd_, &st) != 0)
    throw Error(fmt::format("{}: cannot stat the NVMe file: {}", path_, errno_text(errno)));
  dev_ = st.st_dev;
  ino_ = st.st_ino;
  block_device_ = S_ISBLK(st.st_mode);
  if (!S_ISREG(st.st_mode) && !block_device_)
    throw Error(fmt::format("{}: is neither a regular file nor a block device", path_));
}

// Set after the open rather than passed to it: on a file system without
// O_DIRECT an open(O_CREAT | O_DIRECT) can fail with EINVAL after it has
// created the file, and then we could not tell our file from someone else's.
void NvmeFile::enable_direct_io() {
  const int flags = ::fcntl(fd_, F_GETFL);
  if (flags < 0 || ::fcntl(fd_, F_SETFL, flags | O_DIRECT) != 0) {
    const int err = errno;
    if (err == EINVAL)
      throw Error(fmt::format(
          "{}: the file system refuses O_DIRECT (tmpfs?); put the NVMe file on a disk file "
          "system ({})",
          path_, errno_text(err)));
    throw Error(fmt::format("{}: cannot enable O_DIRECT: {}", path_, errno_text(err)));
  }
}

void NvmeFile::reserve() {
  if (block_device_) {
    uint64_t size = 0;
    if (::ioctl(fd_, BLKGETSIZE64, &size) != 0)
      throw Error(
          fmt::format("{}: cannot read the block device's size: {}", path_, errno_text(errno)));
    if (static_cast<uint64_t>(capacity_) > size)
      throw Error(fmt::format("{}: the block device holds {}, less than the capacity {}", path_,
                              format_bytes(static_cast<int64_t>(size)), format_bytes(capacity_)));
    return;
  }
  int err = 0;
  do {
    err = ::fallocate(fd_, 0, 0, capacity_) == 0 ? 0 : errno;
  } while (err == EINTR);
  if (err == EOPNOTSUPP || err == ENOSYS) {
    // glibc's emulation writes one byte per block, which O_DIRECT refuses:
    // it runs with O_DIRECT off.
    const int flags = ::fcntl(fd_, F_GETFL);
    ::fcntl(fd_, F_SETFL, flags & ~O_DIRECT);
    err = ::posix_fallocate(fd_, 0, capacity_);
    ::fcntl(fd_, F_SETFL, flags);
  }
  if (err == 0) return;
  if (nvme_disk_full(err))
    throw Error(fmt::format("{}: disk full: cannot reserve {} ({} bytes) for the NVMe file ({})",
                            path_, format_bytes(capacity_), capacity_, errno_text(err)));
  throw Error(fmt::format("{}: cannot reserve {} for the NVMe file: {}", path_,
                          format_bytes(capacity_), errno_text(err)));
}

void NvmeFile::close_and_remove() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (!created_) return;
  created_ = false;
  struct stat st {};
  if (::lstat(path_.c_str(), &st) == 0 && st.st_dev == dev_ && st.st_ino == ino_)
    ::unlink(path_.c_str());
}

}  // namespace sa::runtime
