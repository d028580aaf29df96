// The commands on hostile input (issue 15; tests/data/adversarial): each case
// ends in a clear error and exit status 1, never a crash, a hang, an abort
// or a silently changed value. Every command runs under a timeout: a hang
// shows as exit status 124.

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "graph/graph_io.h"
#include "test_util.h"
#include "util/file_io.h"

namespace sa {
namespace {

using testing::data_path;
using testing::run_cli;

constexpr int kTimeout = 60;  // seconds; every command here takes well under one

std::string adversarial(const std::string& file) {
  return data_path("adversarial/" + file);
}

// The command's stderr when it failed as a user error (exit status 1).
std::string user_error(const std::string& args) {
  const testing::CliResult r = run_cli(args, kTimeout);
  EXPECT_EQ(r.exit_code, 1) << args << "\n" << r.out << r.err;
  return r.err;
}

const std::string kMlp3 = adversarial("mlp3.json");
const std::string kPlan =
    "plan " + kMlp3 + " --memory-fraction 0.5 --evaluations 5 --threads 1 --quiet";
const std::string kAten = "run " + data_path("capture/tiny_mlp.graph.json.gz") + " " +
                          adversarial("tiny.plan.json") + " --kernels aten --iterations 1";

// Case 2, 3, 3b, 13, 15: the ATen path rejects bad exec and values files and
// --threads before any kernel runs.
// A bad command line, as main() says it: the subcommand, CLI11's message,
// where the options are listed.
std::string parse_error(const std::string& cmd, const std::string& msg) {
  return "swapadvisor: error: " + cmd + ": " + msg + "\n(`swapadvisor " + cmd +
         " --help` lists the options)\n";
}

TEST(Hostile, AtenRunRejectsBadFilesAndThreads) {
  EXPECT_EQ(user_error(kAten + " --exec " + data_path("capture/tiny_mlp.exec.json.gz") +
                       " --values " + adversarial("v_offset_overflow.values.bin")),
            "swapadvisor: error: " + adversarial("v_offset_overflow.values.bin") +
                " (header): tensors[0].offset: expected a whole number from 0 to 2892, got the "
                "number 9223372036854775744\n");
  EXPECT_EQ(user_error(kAten + " --exec " + adversarial("view_stride_wrap.exec.json.gz") +
                       " --values " + data_path("capture/tiny_mlp.values.bin")),
            "swapadvisor: error: " + adversarial("view_stride_wrap.exec.json.gz") +
                ": ops[1] (aten::addmm.default): args[1].strides[0]: expected a whole number from "
                "0 to 1125899906842624, got the number 4611686018427387904\n");
  EXPECT_EQ(user_error(kAten + " --exec " + data_path("capture/tiny_mlp.exec.json.gz") +
                       " --values " + adversarial("v_graph_name_other.values.bin")),
            "swapadvisor: error: " + adversarial("v_graph_name_other.values.bin") +
                ": the values of graph \"other_model\", not of \"tiny_mlp\"\n");
  EXPECT_EQ(user_error(kAten + " --threads 100000"),
            parse_error("run", "--threads: expected a whole number from 0 to 1024, got '100000'"));
}

// Case 4: a 130 KB gzip bomb stops at the JSON memory limit; within 4 GiB of
// address space (not under AddressSanitizer, which reserves terabytes).
TEST(Hostile, AGzipBombIsStoppedEarly) {
  std::string limit;
#if !defined(__SANITIZE_ADDRESS__)
  limit = "ulimit -v 4194304; ";
#endif
  const std::string err_file = ::testing::TempDir() + "/bomb.err";
  const std::string cmd = "bash -c '" + limit + "exec timeout 60 " + SA_CLI + " stats " +
                          adversarial("bomb_array_128MiB.json.gz") + "' 2>" + err_file;
  const int status = std::system(cmd.c_str());
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 1);
  EXPECT_EQ(read_file(err_file),
            "swapadvisor: error: " + adversarial("bomb_array_128MiB.json.gz") +
                ": x[16777203]: the document would take over 512.0 MiB of memory (the limit for "
                "a JSON input; not a swapadvisor file?)\n");
}

// Case 5: huge but finite op times, launch overheads and compute scales.
TEST(Hostile, HugeOpTimesAreUserErrors) {
  EXPECT_EQ(user_error("plan " + data_path("malformed/time_us_1e308.json") +
                       " --memory-fraction 0.5 --evaluations 5 --threads 1 --quiet"),
            "swapadvisor: error: " + data_path("malformed/time_us_1e308.json") +
                ": ops[0].time_us: 1e+308 us is over the limit of 1e+12 us per op\n");
  EXPECT_EQ(user_error(kPlan + " --device " + adversarial("overhead_huge.json")),
            "swapadvisor: error: " + adversarial("overhead_huge.json") +
                ": launch_overhead_us: must be between 0 and 1000000 us, got 1e+308\n");
  EXPECT_EQ(user_error(kPlan + " --compute-scale 1e308"),
            parse_error("plan",
                        "--compute-scale: expected a number from 1e-06 to 1e+06, got "
                        "'1e308'"));
  // Each factor within its limit, the product over: op 0 takes 1e10 us.
  testing::GraphBuilder b;
  const TensorId x = b.tensor(64, TensorKind::kInput);
  const TensorId y = b.tensor(64, TensorKind::kActivation);
  b.op({x}, {y}, {}, 1e10);
  b.g.name = "slow";
  const std::string slow = ::testing::TempDir() + "/slow.json";
  write_graph(b.g, slow);
  EXPECT_EQ(user_error("plan " + slow + " --compute-scale 1000 --evaluations 5 --quiet"),
            "swapadvisor: error: slow: ops[0] (test::op): its time is 1e+13 us with "
            "--compute-scale 1000 (its time_us), over the limit of 1e+12 us per op\n");
}

// Case 6: wrongly typed device profile fields.
TEST(Hostile, WronglyTypedDeviceFieldsAreNamed) {
  EXPECT_EQ(user_error("stats " + kMlp3 + " --device " + adversarial("format_int.json")),
            "swapadvisor: error: " + adversarial("format_int.json") +
                ": format: expected \"swapadvisor-device\", got the number 5\n");
  EXPECT_EQ(user_error("stats " + kMlp3 + " --device " + adversarial("name_int.json")),
            "swapadvisor: error: " + adversarial("name_int.json") +
                ": name: expected a string, got the number 5\n");
}

// Case 7 and "also seen": NaN, infinity and out-of-range numbers in options.
TEST(Hostile, NumberOptionsRejectNanInfinityAndAbsurdValues) {
  for (const char* opt :
       {"--compute-scale nan", "--compute-scale inf", "--time-budget nan", "--time-budget 1e308",
        "--memory-fraction nan", "--memory-fraction -inf", "--seed -1",
        "--seed 18446744073709551616", "--memory ''", "--threads 100000"}) {
    const std::string err = user_error(kPlan + " " + opt);
    const std::string name = std::string(opt).substr(0, std::string(opt).find(' '));
    EXPECT_EQ(err.rfind("swapadvisor: error: plan: " + name + ": ", 0), 0u) << opt << ": " << err;
  }
  // The largest seed is a seed.
  const testing::CliResult r = run_cli(kPlan + " --seed 18446744073709551615", kTimeout);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  // Bounds are printed briefly, never as 309 digits.
  EXPECT_EQ(
      user_error("stats --model mlp-3 --batch -1"),
      parse_error("stats", "--batch: expected a whole number from 1 to 2147483647, got '-1'"));
}

// Case 11, 12: run's time scale, link speeds and iteration count.
TEST(Hostile, RunRejectsAbsurdTimeScalesLinksAndIterations) {
  const std::string run = "run " + kMlp3 + " " + adversarial("plan.json") + " --iterations 1";
  for (const char* scale : {"1e20", "nan", "1e-320", "-1"})
    EXPECT_EQ(user_error(run + " --time-scale " + scale),
              parse_error("run",
                          "--time-scale: expected auto, 0 or a number from 0.001 to 1e+06, "
                          "got '" +
                              std::string(scale) + "'"));
  EXPECT_EQ(user_error(run + " --device " + adversarial("h2d_tiny.json")),
            "swapadvisor: error: " + adversarial("h2d_tiny.json") +
                ": h2d_gbps: must be between 0.001 and 100000 GB/s, got 1e-300\n");
  EXPECT_EQ(user_error("run " + kMlp3 + " " + adversarial("plan.json") +
                       " --iterations 2147483647 --time-scale 0"),
            parse_error("run",
                        "--iterations: expected a whole number from 1 to 1000000, got "
                        "'2147483647'"));
  EXPECT_EQ(user_error("bandwidth --backend host --bytes 1"),
            "swapadvisor: error: --bytes: 1 B is outside 1.0 MiB to 16.00 GiB: smaller copies "
            "measure latency, not bandwidth\n");
}

// "Also seen": a directory where a file belongs.
TEST(Hostile, ADirectoryIsNotAFile) {
  const std::string dir = ::testing::TempDir();
  EXPECT_EQ(user_error("stats " + dir),
            "swapadvisor: error: " + dir + ": is a directory, not a file\n");
  EXPECT_EQ(user_error("stats " + kMlp3 + " --device " + dir),
            "swapadvisor: error: " + dir + ": is a directory, not a file\n");
}

// Case 10: -o through a symbolic link writes its target; a FIFO or a device
// is written into or refused, never replaced by a regular file.
class HostileOutput : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/hostile_output_" + std::to_string(::getpid());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string zoo(const std::string& out) { return "zoo --model mlp-3 --batch 4 -o " + out; }
  std::string dir_;
};

TEST_F(HostileOutput, ASymlinkIsFollowed) {
  std::ofstream(dir_ + "/target") << "keep";
  std::filesystem::create_symlink("target", dir_ + "/link");
  const testing::CliResult r = run_cli(zoo(dir_ + "/link"), kTimeout);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(std::filesystem::is_symlink(dir_ + "/link"));
  EXPECT_EQ(read_graph(dir_ + "/target").name, "mlp-3-b4");
  int entries = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir_))
    ++entries;
  EXPECT_EQ(entries, 2);  // no temporary file left behind
}

TEST_F(HostileOutput, AFifoIsWrittenIntoOrRefused) {
  const std::string fifo = dir_ + "/fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // No reader: refused at once, not a hang.
  EXPECT_EQ(user_error(zoo(fifo)),
            "swapadvisor: error: " + fifo + ": cannot write: no process is reading this FIFO\n");
  // With a reader: the graph comes through the FIFO.
  std::string got;
  std::thread reader([&] {
    const int fd = ::open(fifo.c_str(), O_RDONLY);
    char buf[4096];
    ssize_t n;
    while (fd >= 0 && (n = ::read(fd, buf, sizeof buf)) > 0)
      got.append(buf, static_cast<size_t>(n));
    if (fd >= 0) ::close(fd);
  });
  testing::CliResult r;
  // The reader opens the FIFO soon; until then the write is refused as above.
  for (int attempt = 0; attempt < 100; ++attempt) {
    r = run_cli(zoo(fifo), kTimeout);
    if (r.exit_code == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  reader.join();
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(parse_graph(got, "fifo").name, "mlp-3-b4");
  struct stat st {};
  ASSERT_EQ(::stat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
}

TEST_F(HostileOutput, ADeviceIsWrittenIntoNotReplaced) {
  const testing::CliResult r = run_cli(zoo("/dev/null"), kTimeout);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  struct stat st {};
  ASSERT_EQ(::stat("/dev/null", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
  // A full device is a write error.
  if (::access("/dev/full", W_OK) == 0) {
    EXPECT_EQ(user_error(zoo("/dev/full")),
              "swapadvisor: error: /dev/full: write failed: No space left on device\n");
    ASSERT_EQ(::stat("/dev/full", &st), 0);
    EXPECT_TRUE(S_ISCHR(st.st_mode));
  }
  EXPECT_EQ(user_error(zoo(dir_)),
            "swapadvisor: error: " + dir_ + ": is a directory, not a file\n");
}

TEST(Hostile, VersionIsCMakes) {
  const testing::CliResult r = run_cli("--version", kTimeout);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, "swapadvisor " SA_VERSION "\n");
}

}  // namespace
}  // namespace sa
