#pragma once
// The file (or raw block device) behind an NvmeStore: opened for O_DIRECT
// with its capacity reserved, and removed again on destruction when, and
// only when, this object created it.

#include <sys/types.h>
#include <cstdint>
#include <string>

namespace sa::runtime {

class NvmeFile {
 public:
  // Opens path, creating it (mode 0600) when it does not exist; an existing
  // regular file or block device is used as it is unless must_create.
  // Refuses a directory, a symbolic link (the store removes what it creates
  // and must not follow a link to somewhere else) and a file system without
  // O_DIRECT. Reserves capacity_bytes (fallocate) so that writes within it
  // cannot run out of space later. Throws sa::Error naming the path.
  NvmeFile(const std::string& path, int64_t capacity_bytes, bool must_create);
  ~NvmeFile();
  NvmeFile(const NvmeFile&) = delete;
  NvmeFile& operator=(const NvmeFile&) = delete;

  int fd() const { return fd_; }
  const std::string& path() const { return path_; }
  int64_t capacity() const { return capacity_; }
  bool created() const { return created_; }

 private:
  void open_or_create(bool must_create);
  void check_kind();
  void enable_direct_io();
  void reserve();
  void close_and_remove();

  std::string path_;
  int64_t capacity_ = 0;
  int fd_ = -1;
  bool created_ = false;
  bool block_device_ = false;
  dev_t dev_ = 0;  // identify the file we created: remove that one, not a
  ino_t ino_ = 0;  // file someone put at the path since
};

// errno's text, thread-safe: "No space left on device".
std::string errno_text(int err);

}  // namespace sa::runtime
