// util/file_io.h: gzip-aware reads with limits, and writes that replace a
// regular file whole but never a link, a device or a FIFO.

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "test_util.h"
#include "util/file_io.h"

namespace sa {
namespace {

using testing::error_of;
namespace fs = std::filesystem;

class FileIo : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/file_io_" + std::to_string(::getpid());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return dir_ + "/" + name; }
  int entries() const {
    int n = 0;
    for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir_))
      ++n;
    return n;
  }
  std::string dir_;
};

TEST_F(FileIo, RoundTripsPlainAndGzip) {
  const std::string text = "{\"x\": [1, 2, 3]}\n";
  write_file(path("a.json"), text);
  write_file(path("a.json.gz"), text);
  EXPECT_EQ(read_file(path("a.json")), text);
  EXPECT_EQ(read_file(path("a.json.gz")), text);
  // Gzip is recognised by its magic bytes, not by the name.
  fs::rename(path("a.json.gz"), path("b.json"));
  EXPECT_EQ(read_file(path("b.json")), text);
  // Replacing a file leaves no temporary file behind.
  write_file(path("a.json"), "new");
  EXPECT_EQ(read_file(path("a.json")), "new");
  EXPECT_EQ(entries(), 2);
}

// Issue 26: a valid name of 246 to 255 bytes had no room for the temporary
// file's suffix ("File name too long").
TEST_F(FileIo, WritesANameOfTheLongestLength) {
  for (size_t n : {246u, 255u}) {
    const std::string name = std::string(n - 5, 'p') + ".json";
    write_file(path(name), "x");
    EXPECT_EQ(read_file(path(name)), "x");
    fs::remove(path(name));
  }
  EXPECT_EQ(entries(), 0);
}

TEST_F(FileIo, ReadsAreLimited) {
  write_file(path("big"), std::string(1001, ' '));
  EXPECT_EQ(read_file(path("big"), 1001).size(), 1001u);
  EXPECT_EQ(error_of([&] { read_file(path("big"), 1000); }),
            path("big") + ": is over 1000 B (the limit for this input; not a swapadvisor file?)");
  // 1 MiB of spaces gzips to about a kilobyte; it must not inflate past the limit.
  write_file(path("spaces.gz"), std::string(1 << 20, ' '));
  EXPECT_LT(fs::file_size(path("spaces.gz")), 10000u);
  EXPECT_EQ(error_of([&] { read_file(path("spaces.gz"), 1 << 19); }),
            path("spaces.gz") +
                ": decompresses to over 512.0 KiB (the limit for this input; not a swapadvisor "
                "file?)");
  EXPECT_EQ(read_file(path("spaces.gz"), 1 << 20).size(), size_t{1} << 20);
  // A stream without an end (a device) stops at the limit too.
  EXPECT_EQ(error_of([&] { read_file("/dev/zero", 1 << 16); }),
            "/dev/zero: is over 64.0 KiB (the limit for this input; not a swapadvisor file?)");
}

TEST_F(FileIo, ReadingADirectoryOrNothingIsAClearError) {
  EXPECT_EQ(error_of([&] { read_file(dir_); }), dir_ + ": is a directory, not a file");
  EXPECT_EQ(error_of([&] { read_file(path("none")); }),
            path("none") + ": cannot open: No such file or directory");
}

TEST_F(FileIo, TruncatedGzipIsAnError) {
  std::string text;
  for (int i = 0; i < 5000; ++i)
    text += std::to_string(i * 7919 % 1000) + ",";
  write_file(path("x.gz"), text);
  const auto size = fs::file_size(path("x.gz"));
  fs::resize_file(path("x.gz"), size / 2);
  EXPECT_EQ(error_of([&] { read_file(path("x.gz")); }),
            path("x.gz") + ": truncated gzip data (the file ends inside the compressed stream)");
}

TEST_F(FileIo, WritingThroughASymlinkWritesItsTarget) {
  write_file(path("target"), "old");
  fs::create_symlink("target", path("link"));
  write_file(path("link"), "new");
  EXPECT_TRUE(fs::is_symlink(path("link")));
  EXPECT_EQ(read_file(path("target")), "new");
  // A link to a file that does not exist yet creates it.
  fs::create_symlink("later", path("dangling"));
  write_file(path("dangling"), "made");
  EXPECT_TRUE(fs::is_symlink(path("dangling")));
  EXPECT_EQ(read_file(path("later")), "made");
  // A loop of links is an error, not a hang.
  fs::create_symlink("loop2", path("loop1"));
  fs::create_symlink("loop1", path("loop2"));
  EXPECT_EQ(error_of([&] { write_file(path("loop1"), "x"); }),
            path("loop1") + ": too many levels of symbolic links");
}

TEST_F(FileIo, DevicesAndFifosAreWrittenIntoNeverReplaced) {
  write_file("/dev/null", "nothing");
  struct stat st {};
  ASSERT_EQ(::stat("/dev/null", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
  // A FIFO without a reader: refused at once.
  ASSERT_EQ(::mkfifo(path("fifo").c_str(), 0600), 0);
  EXPECT_EQ(error_of([&] { write_file(path("fifo"), "x"); }),
            path("fifo") + ": cannot write: no process is reading this FIFO");
  // With a reader (this process, non-blocking): written into.
  const int in = ::open(path("fifo").c_str(), O_RDONLY | O_NONBLOCK);
  ASSERT_GE(in, 0);
  write_file(path("fifo"), "through the fifo");
  char buf[64] = {};
  EXPECT_EQ(::read(in, buf, sizeof buf), 16);
  EXPECT_EQ(std::string(buf), "through the fifo");
  ::close(in);
  ASSERT_EQ(::stat(path("fifo").c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  EXPECT_EQ(error_of([&] { write_file(dir_, "x"); }), dir_ + ": is a directory, not a file");
}

}  // namespace
}  // namespace sa
