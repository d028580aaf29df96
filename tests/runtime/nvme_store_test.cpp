// The NVMe tier's store (runtime/nvme/nvme_store.h) with both engines, its
// errors, and `swapadvisor bandwidth --nvme` end to end.

#include <gtest/gtest.h>

#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/magic.h>
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <filesystem>
#include <functional>
#include <iostream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <numeric>
#include <random>
#include <vector>

#include "runtime/nvme/nvme_store.h"
#include "test_util.h"

namespace sa::runtime {
namespace {

namespace fs = std::filesystem;
using sa::testing::error_of;
using sa::testing::run_cli;

bool is_tmpfs(const char* dir) {
  struct statfs s {};
  return ::statfs(dir, &s) == 0 && s.f_type == TMPFS_MAGIC;
}

// A directory for the tests' NVMe files on a file system that takes
// O_DIRECT: /tmp, or the build tree where /tmp is tmpfs (which refused
// O_DIRECT before Linux 6.6). `unusable` says why a test must skip.
struct NvmeTestDir {
  fs::path path;
  std::string unusable;
  NvmeTestDir() {
    const std::string base = is_tmpfs("/tmp") ? SA_NVME_TEST_ROOT : "/tmp";
    std::string name = base + "/sa_nvme_XXXXXX";
    if (!::mkdtemp(name.data())) {
      unusable = "cannot make a directory under " + base;
      return;
    }
    path = name;
    const std::string probe = (path / "probe").string();
    const int fd = ::open(probe.c_str(), O_RDWR | O_CREAT | O_DIRECT | O_CLOEXEC, 0600);
    if (fd < 0) unusable = base + " refuses O_DIRECT: " + std::strerror(errno);
    if (fd >= 0) ::close(fd);
    ::unlink(probe.c_str());
  }
  ~NvmeTestDir() {
    std::error_code ec;
    if (!path.empty()) fs::remove_all(path, ec);
  }
  std::string operator/(const std::string& f) const { return (path / f).string(); }
};

#define SA_NEED_DIR(dir) \
  if (!(dir).unusable.empty()) GTEST_SKIP() << (dir).unusable

NvmeOptions with_backend(NvmeBackend b, int depth = 32) {
  NvmeOptions o;
  o.backend = b;
  o.queue_depth = depth;
  return o;
}

void fill_random(AlignedBuffer& b, std::mt19937_64& rng) {
  for (int64_t i = 0; i < b.size(); ++i)
    b.data()[i] = static_cast<std::byte>(rng());
}

// Runs f in a forked child (for process-wide settings: rlimits) and returns
// what it returned; "child failed" when it crashed or threw.
std::string in_child(const std::function<std::string()>& f) {
  int fds[2];
  if (::pipe(fds) != 0) return "pipe failed";
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    std::string out;
    try {
      out = f();
    } catch (const std::exception& e) {
      out = std::string("child threw: ") + e.what();
    }
    const ssize_t n = ::write(fds[1], out.data(), out.size());
    ::_exit(n == static_cast<ssize_t>(out.size()) ? 0 : 1);
  }
  ::close(fds[1]);
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fds[0], buf, sizeof buf)) > 0)
    out.append(buf, static_cast<size_t>(n));
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? out : "child failed";
}

// Both engines: io_uring is skipped where the kernel (or the build) has none.
class NvmeEngines : public ::testing::TestWithParam<NvmeBackend> {
 protected:
  void SetUp() override {
    std::string why;
    if (GetParam() == NvmeBackend::kIoUring && !NvmeStore::io_uring_available(&why))
      GTEST_SKIP() << why;
  }
  NvmeOptions options(int depth = 32) const { return with_backend(GetParam(), depth); }
};

INSTANTIATE_TEST_SUITE_P(Backends, NvmeEngines,
                         ::testing::Values(NvmeBackend::kThreads, NvmeBackend::kIoUring),
                         [](const auto& info) {
                           return info.param == NvmeBackend::kThreads ? "threads" : "io_uring";
                         });

TEST_P(NvmeEngines, UsesTheEngineAsked) {
  NvmeTestDir dir;
  SA_NEED_DIR(dir);
  NvmeStore store(dir / "f", 1 << 20, options());
  EXPECT_STREQ(store.backend_name(), GetParam() == NvmeBackend::kThreads ? "threads" : "io_uring");
}

// Tensors of random sizes (1 B to 3 MiB, most smaller than a chunk, some
// spanning several) at random aligned offsets, written all at once, then
// read back all at once into buffers filled with something else; every
// byte of every rounded-up length must come back.
TEST_P(NvmeEngines, RoundTripsRandomTensors) {
  NvmeTestDir dir;
  SA_NEED_DIR(dir);
  const uint64_t seed = sa::testing::seed_from_env(std::random_device{}());
  std::cout << "seed " << seed << " (SA_TEST_SEED reruns it)\n";
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  const int n = 150;
  std::vector<int64_t> sizes(n), offsets(n);
  for (int64_t& s : sizes)
    s = rng() % 8 == 0 ? 1 + static_cast<int64_t>(rng() % (3 << 20))
                       : 1 + static_cast<int64_t>(rng() % (64 << 10));
  // Random placement: a random order, each after the last with a gap of
  // 0 to 3 blocks.
  std::vector<int> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), rng);
  int64_t end = 0;
  for (int i : order) {
    offsets[i] = end + static_cast<int64_t>(rng() % 4) * NvmeStore::kAlignment;
    end = offsets[i] + nvme_round_up(sizes[i]);
  }
  NvmeStore store(dir / "tensors.bin", end, options(16));
  std::vector<AlignedBuffer> src, dst;
  for (int i = 0; i < n; ++i) {
    fill_random(src.emplace_back(sizes[i]), rng);
    AlignedBuffer& d = dst.emplace_back(sizes[i]);
    std::memset(d.data(), 0xA5, static_cast<size_t>(d.size()));
  }
  std::vector<NvmeStore::Ticket> writes, reads;
  for (int i = 0; i < n; ++i)
    writes.push_back(store.submit_write(offsets[i], src[i].data(), sizes[i]));
  for (auto t : writes)
    store.wait(t);
  for (int i = 0; i < n; ++i)
    reads.push_back(store.submit_read(offsets[i], dst[i].data(), sizes[i]));
  for (int i = n - 1; i >= 0; --i)  // any order
    store.wait(reads[i]);
  for (int i = 0; i < n; ++i)
    ASSERT_EQ(std::memcmp(src[i].data(), dst[i].data(), static_cast<size_t>(src[i].size())), 0)
        << "tensor " << i << " of " << sizes[i] << " bytes at offset " << offsets[i];
}

// Far more requests than the queue depth, all submitted before any wait,
// some of many small chunks; then drain() alone ends them.
TEST_P(NvmeEngines, ManyRequestsInFlight) {
  NvmeTestDir dir;
  SA_NEED_DIR(dir);
  NvmeOptions o = options(4);
  o.chunk_bytes = 16 << 10;  // a 256 KiB request is 16 chunks
  const int n = 400;
  const int64_t each = 256 << 10;
  NvmeStore store(dir / "many.bin", n * each, o);
  std::mt19937_64 rng(7);
  AlignedBuffer src(n * each), dst(n * each);
  fill_random(src, rng);
  std::memset(dst.data(), 0, static_cast<size_t>(dst.size()));
  for (int i = 0; i < n; ++i)
    store.submit_write(i * each, src.data() + i * each, each);
  store.drain();
  std::vector<NvmeStore::Ticket> reads;
  for (int i = 0; i < n; ++i)
    reads.push_back(store.submit_read(i * each, dst.data() + i * each, each));
  store.wait(reads[n / 2]);
  store.drain();
  store.wait(reads[0]);  // ended by drain(): returns at once
  EXPECT_EQ(std::memcmp(src.data(), dst.data(), static_cast<size_t>(src.size())), 0);
}

// A read past the end of the file (truncated behind the store's back) is
// an error naming the offset and how much came, never a silent zero fill.
TEST_P(NvmeEngines, ShortReadIsAnError) {
  NvmeTestDir dir;
  SA_NEED_DIR(dir);
  const std::string path = dir / "short.bin";
  NvmeStore store(path, 1 << 20, options());
  AlignedBuffer buf(1 << 20);
  std::memset(buf.data(), 1, static_cast<size_t>(buf.size()));
  store.wait(store.submit_write(0, buf.data(), 1 << 20));
  ASSERT_EQ(::truncate(path.c_str(), 256 << 10), 0);
  std::string e = error_of([&] { store.wait(store.submit_read(0, buf.data(), 1 << 20)); });
  EXPECT_NE(e.find(path + ": short read at offset 0: 262144 of 1048576 bytes"), std::string::npos)
      << e;
  e = error_of([&] { store.wait(store.submit_read(512 << 10, buf.data(), 4096)); });
  EXPECT_NE(e.find("short read at offset 524288: 0 of 4096 bytes"), std::string::npos) << e;
  // An end of file inside a block: O_DIRECT stops there, and so do we.
  ASSERT_EQ(::truncate(path.c_str(), (256 << 10) + 100), 0);
  e = error_of([&] { store.wait(store.submit_read(0, buf.data(), 1 << 20)); });
  EXPECT_NE(e.find("short read at offset 0: 262244 of 1048576 bytes"), std::string::npos) << e;
}

// The file size limit (RLIMIT_FSIZE, in a child process: it is process
// wide) makes the reservation and writes beyond it fail with EFBIG, as a
// full disk would with ENOSPC: both read as "disk full".
TEST_P(NvmeEngines, DiskFullIsAnError) {
  NvmeTestDir dir;
  SA_NEED_DIR(dir);
  const NvmeOptions o = options();
  const std::string out = in_child([&] {
    ::signal(SIGXFSZ, SIG_IGN);  // else the signal kills the child first
    std::string r;
    {
      NvmeStore store(dir / "full.bin", 4 << 20, o);
      AlignedBuffer buf(1 << 20);
      std::memset(buf.data(), 3, static_cast<size_t>(buf.size()));
      struct rlimit lim {
        1 << 20, RLIM_INFINITY
      };
      ::setrlimit(RLIMIT_FSIZE, &lim);
      // Straddling the limit: half is written, then the rest fails.
      r += error_of([&] { store.wait(store.submit_write(512 << 10, buf.data(), 1 << 20)); });
      r += "\n";
      r += error_of([&] { store.wait(store.submit_write(2 << 20, buf.data(), 1 << 20)); });
      r += "\n";
    }
    r += error_of([&] { NvmeStore(dir / "big.bin", 8 << 20, o); });
    r += fs::exists(dir / "big.bin") ? " (left behind)" : "";
    return r;
  });
  EXPECT_NE(out.find("disk full: write at offset 524288 failed after 524288 of 1048576 bytes"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("disk full: write at offset 2097152 failed after 0 of 1048576 bytes"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find(dir / "big.bin" + ": disk full: cannot reserve 8.0 MiB"), std::string::npos)
      << out;
  EXPECT_EQ(out.find("left behind"), std::string::npos) << out;
}

TEST(NvmeStore, RefusesAMissingDirectory) {
  const std::string e = error_of([] { NvmeStore("/nonexistent-sa-dir/sub/f.bin", 1 << 20); });
  EXPECT_NE(e.find("/nonexistent-sa-dir/sub/f.bin: cannot create the NVMe file: the directory "
                   "/nonexistent-sa-dir/sub does not exist (No such file or directory)"),
            std::string::npos)
      << e;
}

// tmpfs refused O_DIRECT until Linux 6.6; where it still does, the error
// says so and leaves no file behind.
TEST(NvmeStore, TmpfsRefusingODirectIsNamed) {
  if (!is_tmpfs("/dev/shm")) GTEST_SKIP() << "/dev/shm is not tmpfs here";
  const std::string path = "/dev/shm/sa_nvme_test_" + std::to_string(::getpid());
  std::string e;
  try {
    NvmeStore store(path, 1 << 20);
  } catch (const Error& err) {
    e = err.what();
  }
  EXPECT_FALSE(fs::exists(path));
  if (e.empty()) GTEST_SKIP() << "this kernel's tmpfs takes O_DIRECT (Linux 6.6 and later)";
  EXPECT_NE(e.find(path + ": the file system refuses O_DIRECT (tmpfs?); put the NVMe file on a "
                          "disk file system"),
            std::string::npos)
      << e;
}

// Where tmpfs takes O_DIRECT, ramfs still refuses it: mounted in a child's
// own mount namespace (nothing outside sees it; it goes with the child),
// where the container lets us.
TEST(NvmeStore, AFileSystemRefusingODirectIsNamed) {
  NvmeTestDir dir;
  SA_NEED_DIR(dir);
  const std::string mnt = dir / "ramfs";
  fs::create_directory(mnt);
  const std::string out = in_child([&]() -> std::string {
    if (::unshare(CLONE_NEWNS) != 0) return "skip: unshare: " + std::string(std::strerror(errno));
    if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
        ::mount("none", mnt.c_str(), "ramfs", 0, nullptr) != 0)
      return "skip: mount ramfs: " + std::string(std::strerror(errno));
    const std::string path = mnt + "/f.bin";
    std::string e = error_of([&] { NvmeStore(path, 1 << 20); });
    return e + (fs::exists(path) ? " (left behind)" : "");
  });
  if (out.rfind("skip: ", 0) == 0) GTEST_SKIP() << out;
  EXPECT_NE(out.find(mnt + "/f.bin: the file system refuses O_DIRECT (tmpfs?); put the NVMe "
                           "file on a disk file system (Invalid argument)"),
            std::string::npos)
      << out;
  EXPECT_EQ(out.find("left behind"), std::string::npos) << out;
}

TEST(NvmeStore, RefusesUnalignedRequests) {
  NvmeTestDir dir;
  SA_NEED_DIR(dir);
  NvmeStore store(dir / "f", 1 << 20);
  AlignedBuffer buf(8192);
  std::string e = error_of([&] { store.submit_write(100, buf.data(), 4096); });
  EXPECT_NE(e.find("write at offset 100: the offset is not a multiple of 4096"), std::string::npos)
      << e;
  e = error_of([&] { store.submit_read(0, buf.data() + 8, 100); });
  EXPECT_NE(e.find("is not aligned to 4096 bytes"), std::string::npos) << e;
  e = error_of([&] { store.submit_read((1 << 20) - 4096, buf.data(), 4097); });
  EXPECT_NE(e.find("read of 8192 bytes at offset 1044480 ends past the capacity 1048576"),
            std::string::npos)
      << e;
}

// A symbolic link is refused (the store would write, and remove, wherever
// it points), as is a directory; neither is touched.
TEST(NvmeStore, RefusesSymlinksAndDirectories) {
  NvmeTestDir dir;
  SA_NEED_DIR(dir);
  const std::string target = dir / "target", link = dir / "link";
  std::FILE* f = std::fopen(target.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fclose(f);
  fs::create_symlink(target, link);
  std::string e = error_of([&] { NvmeStore(link, 1 << 20); });
  EXPECT_NE(e.find(link + ": is a symbolic link"), std::string::npos) << e;
  fs::create_symlink(dir / "nowhere", dir / "dangling");
  e = error_of([&] { NvmeStore(dir / "dangling", 1 << 20); });
  EXPECT_NE(e.find("is a symbolic link"), std::string::npos) << e;
  e = error_of([&] { NvmeStore(dir.path.string(), 1 << 20); });
  EXPECT_NE(e.find(dir.path.string() + ": is a directory"), std::string::npos) << e;
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(fs::file_size(target), 0u);
  EXPECT_FALSE(fs::exists(dir / "nowhere"));
}

// The store removes the file it created, and never one it found.
TEST(NvmeStore, RemovesOnlyTheFileItCreated) {
  NvmeTestDir dir;
  SA_NEED_DIR(dir);
  const std::string mine = dir / "mine", theirs = dir / "theirs";
  {
    NvmeStore store(mine, 1 << 20);
    EXPECT_EQ(fs::file_size(mine), 1u << 20);  // reserved
  }
  EXPECT_FALSE(fs::exists(mine));
  std::FILE* f = std::fopen(theirs.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fclose(f);
  { NvmeStore store(theirs, 1 << 20); }
  EXPECT_TRUE(fs::exists(theirs));
  NvmeOptions o;
  o.must_create = true;
  const std::string e = error_of([&] { NvmeStore(theirs, 1 << 20, o); });
  EXPECT_NE(e.find(theirs + ": already exists"), std::string::npos) << e;
}

TEST(NvmeStore, IoUringWhereUnavailableIsAnError) {
  NvmeTestDir dir;
  SA_NEED_DIR(dir);
  std::string why;
  if (NvmeStore::io_uring_available(&why)) GTEST_SKIP() << "io_uring is available here";
  const std::string e =
      error_of([&] { NvmeStore(dir / "f", 1 << 20, with_backend(NvmeBackend::kIoUring)); });
  EXPECT_NE(e.find("the io_uring backend is not available: " + why), std::string::npos) << e;
  NvmeStore store(dir / "f", 1 << 20);  // auto falls back
  EXPECT_STREQ(store.backend_name(), "threads");
}

// As in a container whose seccomp profile forbids io_uring (Docker's
// default does): a child process denies itself io_uring_setup, and auto
// must fall back to threads while io_uring asked for is an error.
TEST(NvmeStore, FallsBackToThreadsWhereIoUringIsForbidden) {
  NvmeTestDir dir;
  SA_NEED_DIR(dir);
  const std::string out = in_child([&]() -> std::string {
    sock_filter filter[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_setup, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    sock_fprog prog{static_cast<unsigned short>(std::size(filter)), filter};
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
        ::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0)
      return "skip: seccomp: " + std::string(std::strerror(errno));
    std::string r = NvmeStore::io_uring_available() ? "available" : "unavailable";
    NvmeStore store(dir / "auto.bin", 1 << 20);
    AlignedBuffer a(4096), b(4096);
    std::memset(a.data(), 7, 4096);
    store.wait(store.submit_write(0, a.data(), 4096));
    store.wait(store.submit_read(0, b.data(), 4096));
    r += std::string(" ") + store.backend_name() +
         (std::memcmp(a.data(), b.data(), 4096) == 0 ? " same" : " differ") + "\n";
    return r + error_of([&] {
             NvmeStore(dir / "uring.bin", 1 << 20, with_backend(NvmeBackend::kIoUring));
           });
  });
  if (out.rfind("skip: ", 0) == 0) GTEST_SKIP() << out;
  EXPECT_NE(out.find("unavailable threads same\n"), std::string::npos) << out;
  EXPECT_NE(out.find("uring.bin: the io_uring backend is not available"), std::string::npos) << out;
}

TEST(NvmeCli, BandwidthMeasuresTheNvmeTier) {
  NvmeTestDir dir;
  SA_NEED_DIR(dir);
  const std::string file = dir / "nvme.bin", profile = dir / "profile.json";
  const std::string link =
      "bandwidth --backend host --link v100-16gb --time-scale 50 --bytes 4MiB --repeats 3 "
      "--gemm 0 --base v100-16gb --nvme " +
      file + " --nvme-bytes ";
  const auto r = run_cli(link + "64MiB --json -o " + profile, 300);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  for (const char* key : {"nvme_read_gbps", "nvme_write_gbps", "nvme_latency_us"})
    EXPECT_GT(j.at(key).get<double>(), 0) << key;
  EXPECT_EQ(j.at("nvme_queue_depth"), 32);
  EXPECT_EQ(j.at("nvme").at("bytes"), 64 << 20);
  const DeviceProfile d = load_device(profile);
  EXPECT_TRUE(d.has_nvme());
  EXPECT_EQ(d.nvme_read_gbps, j["nvme_read_gbps"].get<double>());
  EXPECT_EQ(d.nvme_write_gbps, j["nvme_write_gbps"].get<double>());
  EXPECT_EQ(d.nvme_latency_us, j["nvme_latency_us"].get<double>());
  EXPECT_EQ(d.nvme_queue_depth, 32);
  EXPECT_NE(d.source.find("NVMe tier measured at " + file), std::string::npos) << d.source;
  EXPECT_FALSE(fs::exists(file));  // removed afterwards
  // The text report, with a queue depth asked for.
  const auto t = run_cli(link + "16MiB --nvme-queue-depth 4", 300);
  ASSERT_EQ(t.exit_code, 0) << t.err;
  for (const char* line :
       {"nvme write  ", "nvme read   ", "nvme 4 KiB  ", " 4 x 1.0 MiB in flight"})
    EXPECT_NE(t.out.find(line), std::string::npos) << line << "\n" << t.out;
  EXPECT_FALSE(fs::exists(file));
}

TEST(NvmeCli, BandwidthNamesABadNvmePath) {
  const auto r = run_cli(
      "bandwidth --backend host --gemm 0 --nvme /nonexistent-sa-dir/nvme.bin --nvme-bytes 16MiB",
      60);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("/nonexistent-sa-dir/nvme.bin: cannot create the NVMe file: the directory "
                       "/nonexistent-sa-dir does not exist"),
            std::string::npos)
      << r.err;
  NvmeTestDir dir;
  SA_NEED_DIR(dir);
  std::FILE* f = std::fopen((dir / "exists").c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fclose(f);
  const auto e = run_cli("bandwidth --backend host --gemm 0 --nvme " + dir / "exists", 60);
  EXPECT_EQ(e.exit_code, 1) << e.err;
  EXPECT_NE(e.err.find("already exists"), std::string::npos) << e.err;
  EXPECT_TRUE(fs::exists(dir / "exists"));
  const auto s =
      run_cli("bandwidth --backend host --gemm 0 --nvme " + dir / "x" + " --nvme-bytes 1MiB", 60);
  EXPECT_EQ(s.exit_code, 1) << s.err;
  EXPECT_NE(s.err.find("--nvme-bytes: 1.0 MiB is outside 16.0 MiB to 1.00 TiB"), std::string::npos)
      << s.err;
}

}  // namespace
}  // namespace sa::runtime
