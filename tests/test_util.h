#pragma once
// Helpers shared by the test programs.

#include <unistd.h>

#include <sys/wait.h>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "cost/device.h"
#include "graph/graph.h"
#include "plan/plan.h"
#include "util/error.h"

namespace sa::testing {

// A new directory under /tmp, removed with everything in it at the end of
// the scope; dir / "name" is a path in it.
struct TempDir {
  std::filesystem::path path;
  TempDir() : TempDir("/tmp") {}
  explicit TempDir(const std::string& base) {
    std::string name = base + "/sa_test_XXXXXX";
    if (const char* made = mkdtemp(name.data())) path = made;
  }
  ~TempDir() {
    std::error_code ec;
    if (!path.empty()) std::filesystem::remove_all(path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string operator/(const std::string& f) const { return (path / f).string(); }
};

// A link of 1 byte per microsecond each way and 2 both at once: copy
// times a test works out by hand.
inline DeviceProfile unit_link() {
  DeviceProfile d;
  d.h2d_gbps = 0.001;  // 1 B/us
  d.d2h_gbps = 0.001;
  d.duplex_gbps = 0.002;
  return d;
}

// Appends a step of any kind to a hand-built plan, with the given waits.
inline void add_step(Plan& p, StepKind kind, int32_t subject, ObjectId obj,
                     std::vector<StepId> waits) {
  Step s = Step::of(kind, subject, obj);
  s.wait_begin = static_cast<int32_t>(p.waits.size());
  p.waits.insert(p.waits.end(), waits.begin(), waits.end());
  s.wait_end = static_cast<int32_t>(p.waits.size());
  p.steps.push_back(s);
}

// A step's op or tensor, whichever its kind has (for tests that compare
// steps of any kind), and the step with another subject.
inline int32_t subject_of(const Step& s) {
  return s.runs_op() ? s.op() : s.tensor();
}
// A plan's steps on one line: "C3" for op 3's compute step, "R3" for its
// recompute, "in2", "out2", "drop2" for tensor 2's copies and drop.
inline std::string describe_steps(const Plan& p) {
  std::string s;
  for (const Step& st : p.steps) {
    if (!s.empty()) s += " ";
    switch (st.kind) {
      case StepKind::kCompute:
        s += "C";
        break;
      case StepKind::kRecompute:
        s += "R";
        break;
      case StepKind::kSwapIn:
        s += "in";
        break;
      case StepKind::kSwapOut:
        s += "out";
        break;
      case StepKind::kDrop:
        s += "drop";
        break;
    }
    s +=
        std::to_string(subject_of(st));  // apart: g++ 12 warns (-Wrestrict) on "C" + to_string(...)
  }
  return s;
}

inline Step with_subject(const Step& s, int32_t subject) {
  Step r = Step::of(s.kind, subject, s.object);
  r.wait_begin = s.wait_begin;
  r.wait_end = s.wait_end;
  r.obj_begin = s.obj_begin;
  r.obj_end = s.obj_end;
  return r;
}

// SA_TEST_SEED when set, else `fallback`: the seed of a randomized test,
// which prints it (SCOPED_TRACE) so that a failure can be rerun.
inline uint64_t seed_from_env(uint64_t fallback) {
  const char* env = std::getenv("SA_TEST_SEED");
  return env && *env ? std::strtoull(env, nullptr, 0) : fallback;
}

inline std::string data_path(const std::string& rel) {
  return std::string(SA_TEST_DATA) + "/" + rel;
}

struct CliResult {
  int exit_code = -1;
  std::string out;  // stdout
  std::string err;  // stderr
};

// Runs a shell command line, its stderr kept apart from its stdout.
inline CliResult run_shell(const std::string& cmd) {
  char err_name[] = "/tmp/sa_cli_err_XXXXXX";
  int fd = mkstemp(err_name);
  if (fd >= 0) close(fd);
  CliResult r;
  FILE* p = popen((cmd + " 2>" + err_name).c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0)
    r.out.append(buf, n);
  const int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  if (FILE* e = fopen(err_name, "r")) {
    while ((n = fread(buf, 1, sizeof buf, e)) > 0)
      r.err.append(buf, n);
    fclose(e);
  }
  std::remove(err_name);
  return r;
}

// Runs the swapadvisor binary with args (a shell-quoted string); with
// timeout_s > 0, killed after that many seconds (exit code 124: a hang).
inline CliResult run_cli(const std::string& args, int timeout_s = 0) {
  const std::string timeout =
      timeout_s > 0 ? "timeout -k 5 " + std::to_string(timeout_s) + " " : std::string();
  return run_shell(timeout + std::string(SA_CLI) + " " + args);
}

// The message of the sa::Error that f() throws, or "(no error)".
template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const sa::Error& e) {
    return e.what();
  }
  return "(no error)";
}

// A small graph builder for tests: add tensors and ops by hand.
struct GraphBuilder {
  Graph g;
  TensorId tensor(int64_t bytes, TensorKind kind, std::string name = "") {
    g.tensors.push_back({bytes, kind, std::move(name), {}, {}});
    return g.num_tensors() - 1;
  }
  OpId op(std::vector<TensorId> inputs, std::vector<TensorId> outputs,
          std::vector<TensorId> updates = {}, double time_us = 1.0, std::string type = "test::op") {
    Op o;
    o.type = std::move(type);
    o.inputs = std::move(inputs);
    o.outputs = std::move(outputs);
    o.updates = std::move(updates);
    o.time_us = time_us;
    g.ops.push_back(std::move(o));
    return g.num_ops() - 1;
  }
};

// The plan tests' graph: tensors of 100 B w (param), x (input), a, b
// (activations), gw (gradient), and four ops named after their roles:
//   op0 fwd: a = f(x, w)   op1 mid: b = g(a)   op2 bwd: gw = h(b, a)   op3 sgd: w -= gw
// With relu: an op "relu" after fwd updates a in place (ops fwd, relu, mid,
// bwd, sgd).
inline Graph fwd_mid_bwd_sgd_graph(bool relu = false) {
  GraphBuilder b;
  b.tensor(100, TensorKind::kParam, "w");       // 0
  b.tensor(100, TensorKind::kInput, "x");       // 1
  b.tensor(100, TensorKind::kActivation, "a");  // 2
  b.tensor(100, TensorKind::kActivation, "b");  // 3
  b.tensor(100, TensorKind::kGradient, "gw");   // 4
  std::vector<std::string> names = {"fwd", "mid", "bwd", "sgd"};
  b.op({1, 0}, {2});
  if (relu) {
    b.op({}, {}, {2});
    names.insert(names.begin() + 1, "relu");
  }
  b.op({2}, {3});
  b.op({3, 2}, {4});
  b.op({4}, {}, {0});
  for (int o = 0; o < b.g.num_ops(); ++o)
    b.g.ops[o].name = names[o];
  return b.g;
}

}  // namespace sa::testing
