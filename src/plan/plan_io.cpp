#include "plan/plan_io.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "plan/verify.h"
#include "util/checked.h"
#include "util/error.h"
#include "util/file_io.h"
#include "util/json.h"
#include "util/limits.h"

namespace sa {
namespace {

using json = nlohmann::json;

uint64_t fnv(uint64_t h, uint64_t v) {
  for (int i = 0; i < 8; ++i) {
    h ^= (v >> (8 * i)) & 0xff;
    h *= 1099511628211ull;
  }
  return h;
}

// The checked reading of a plan file's fields, with errors that name the
// file and the field.
class PlanFieldReader {
 public:
  explicit PlanFieldReader(std::string_view origin) : origin_(origin) {}

  [[noreturn]] void fail(const std::string& where, const std::string& what) const {
    throw Error(fmt::format("{}: {}: {}", origin_, where, what));
  }
  const json& field(const json& obj, const std::string& where, const char* name) const {
    if (!obj.is_object()) fail(where, "expected an object");
    auto it = obj.find(name);
    if (it == obj.end()) fail(where.empty() ? name : where + "." + name, "missing required field");
    return *it;
  }
  int64_t integer(const json& j, const std::string& where, int64_t lo, int64_t hi) const {
    if (!j.is_number_integer())
      fail(where, fmt::format("expected an integer, got {}", j.type_name()));
    if (j.is_number_unsigned() && j.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
      fail(where, fmt::format("{} is out of range [{}, {}]", j.get<uint64_t>(), lo, hi));
    const int64_t v = j.get<int64_t>();
    if (v < lo || v > hi) fail(where, fmt::format("{} is out of range [{}, {}]", v, lo, hi));
    return v;
  }
  const json& array(const json& j, const std::string& where, int64_t size = -1) const {
    if (!j.is_array()) fail(where, "expected an array");
    if (size >= 0 && static_cast<int64_t>(j.size()) != size)
      fail(where, fmt::format("expected {} entries, got {}", size, j.size()));
    return j;
  }
  template <typename T>
  std::vector<T> ints(const json& j, const std::string& where, int64_t size, int64_t lo,
                      int64_t hi) const {
    array(j, where, size);
    std::vector<T> out;
    out.reserve(j.size());
    for (size_t i = 0; i < j.size(); ++i)
      out.push_back(static_cast<T>(integer(j[i], fmt::format("{}[{}]", where, i), lo, hi)));
    return out;
  }

  // Note [Host tier]: the optional host_budget and nvme_tensors (files
  // without them: unlimited, nothing on NVMe).
  void host_tier(const json& doc, int num_tensors, Plan* p) const {
    if (!doc.contains("host_budget")) {
      if (doc.contains("nvme_tensors")) fail("nvme_tensors", "given without a host_budget");
      return;
    }
    p->host_budget = integer(doc["host_budget"], "host_budget", 1, INT64_MAX);
    if (!doc.contains("nvme_tensors")) return;
    const json& nv = array(doc["nvme_tensors"], "nvme_tensors");
    std::vector<TensorId>& ts = p->nvme_tensors;
    ts = ints<TensorId>(nv, "nvme_tensors", static_cast<int64_t>(nv.size()), 0, num_tensors - 1);
    if (!std::is_sorted(ts.begin(), ts.end()) ||
        std::adjacent_find(ts.begin(), ts.end()) != ts.end())
      fail("nvme_tensors", "expected tensor ids in ascending order, each once");
  }

  // The optional data_parallel object (docs/plan-format.md); one rank without.
  DataParallel data_parallel(const json& doc) const {
    DataParallel dp;
    if (!doc.is_object() || !doc.contains("data_parallel")) return dp;
    const json& j = doc["data_parallel"];
    if (!j.is_object()) fail("data_parallel", "expected an object");
    dp.ranks = static_cast<int>(
        integer(field(j, "data_parallel", "ranks"), "data_parallel.ranks", 1, kMaxRanks));
    if (j.contains("shard_optimizer")) {
      if (!j["shard_optimizer"].is_boolean())
        fail("data_parallel.shard_optimizer", "expected true or false");
      dp.shard_optimizer = j["shard_optimizer"].get<bool>();
    }
    if (j.contains("bucket_bytes"))
      dp.bucket_bytes = integer(j["bucket_bytes"], "data_parallel.bucket_bytes", 1, kMaxBytes);
    return dp;
  }

 private:
  std::string_view origin_;
};

// The plan itself, against its graph.
class PlanReader : public PlanFieldReader {
 public:
  PlanReader(const Graph& g, std::string_view origin) : PlanFieldReader(origin), g_(g) {}

  Plan read(const json& doc) const {
    if (!doc.is_object()) fail("(document)", "expected an object");
    if (!doc.contains("format") || doc["format"] != "swapadvisor-plan")
      fail("format", "expected \"swapadvisor-plan\"");
    if (!doc.contains("version") || !(doc["version"] == 1 || doc["version"] == 2))
      fail("version", "unsupported version (this reader supports 1 and 2)");
    const int version = doc["version"].get<int>();
    const int n = g_.num_tensors(), m = g_.num_ops();
    const json& graph = field(doc, "", "graph");
    const std::string fp = fmt::format("{:016x}", graph_fingerprint(g_));
    const json& gfp = field(graph, "graph", "fingerprint");
    if (!gfp.is_string())
      fail("graph.fingerprint", fmt::format("expected a string, got {}", describe(gfp)));
    if (gfp.get<std::string>() != fp)
      fail("graph.fingerprint",
           fmt::format("this plan was made for another graph (fingerprint {}, this graph's is {})",
                       quote(gfp.get_ref<const std::string&>()), fp));
    Plan p;
    if (doc.contains("method") && doc["method"].is_string()) p.method = doc["method"];
    p.data_parallel = data_parallel(doc);
    p.memory_budget = integer(field(doc, "", "memory_budget"), "memory_budget", 0, INT64_MAX);
    p.order = ints<OpId>(field(doc, "", "order"), "order", m, 0, m - 1);
    host_tier(doc, n, &p);
    // No plan needs more objects than it can name: every access, step and
    // initial resident names one. A ceiling checked before anything is
    // allocated for them (a tiny file must not make us allocate gigabytes).
    const json& steps = array(field(doc, "", "steps"), "steps");
    // (A recompute step names one object per access slot of its op.)
    int64_t slots = 0;
    for (const Op& op : g_.ops)
      slots += num_access_slots(op);
    const int64_t max_objects =
        int64_t{n} + m + slots + 2 * static_cast<int64_t>(steps.size()) + 4096;
    if (version >= 2) {
      const json& a = field(doc, "", "allocator");
      const auto alloc = a.is_string() ? allocator_from_string(a.get<std::string>()) : std::nullopt;
      if (!alloc) fail("allocator", "expected \"size-class\" or \"arena\"");
      p.allocator = *alloc;
    }
    if (p.allocator == Allocator::kArena) {
      const json& objs = array(field(doc, "", "objects"), "objects");
      if (static_cast<int64_t>(objs.size()) > max_objects)
        fail("objects", fmt::format("{} objects, more than this plan could use ({})", objs.size(),
                                    max_objects));
      p.objects.reserve(objs.size());
      for (size_t i = 0; i < objs.size(); ++i) {
        const std::string where = fmt::format("objects[{}]", i);
        const auto pair = ints<int64_t>(objs[i], where, 2, 0, INT64_MAX);
        if (pair[1] > INT64_MAX - pair[0]) fail(where, "offset + bytes overflows");
        p.objects.push_back({pair[0], pair[1], -1});
      }
    } else {
      const json& pool = field(doc, "", "pool");
      const json& cb = field(pool, "pool", "class_bytes");
      array(cb, "pool.class_bytes");
      const int64_t nc = static_cast<int64_t>(cb.size());
      p.pool.class_bytes = ints<int64_t>(cb, "pool.class_bytes", nc, 1, int64_t{1} << 50);
      p.pool.class_count =
          ints<int32_t>(field(pool, "pool", "class_count"), "pool.class_count", nc, 0, 1 << 24);
      int64_t objects = 0;
      for (int32_t k : p.pool.class_count)
        objects += k;
      if (objects > max_objects)
        fail("pool.class_count",
             fmt::format("{} objects, more than this plan could use ({})", objects, max_objects));
      // Laid out one after the other, the objects must end within 2^63 - 1
      // bytes (their offsets would overflow); the verifier compares the pool
      // with the budget.
      int64_t bytes = 0;
      for (int64_t c = 0; c < nc; ++c) {
        const auto end = checked_mul_add(p.pool.class_bytes[c], p.pool.class_count[c], bytes);
        if (!end) fail("pool", "its objects take more than 2^63 - 1 bytes");
        bytes = *end;
      }
      p.layout_pool();
      p.tensor_class = ints<ClassId>(field(doc, "", "tensor_class"), "tensor_class", n, 0, nc - 1);
      p.workspace_class =
          ints<ClassId>(field(doc, "", "workspace_class"), "workspace_class", m, -1, nc - 1);
    }
    const int num_objects = p.num_objects();
    const json& access = array(field(doc, "", "access_objects"), "access_objects", m);
    p.access_begin.assign(m + 1, 0);
    for (int o = 0; o < m; ++o) {
      const std::string where = fmt::format("access_objects[{}]", o);
      auto objs = ints<ObjectId>(access[o], where, num_access_slots(g_.ops[o]), 0, num_objects - 1);
      p.access_objects.insert(p.access_objects.end(), objs.begin(), objs.end());
      p.access_begin[o + 1] = static_cast<int32_t>(p.access_objects.size());
    }
    const json& resident = array(field(doc, "", "initial_resident"), "initial_resident");
    for (size_t i = 0; i < resident.size(); ++i) {
      const std::string where = fmt::format("initial_resident[{}]", i);
      auto pair = ints<int32_t>(resident[i], where, 2, 0, INT32_MAX);
      if (pair[0] >= n) fail(where, fmt::format("unknown tensor {}", pair[0]));
      if (pair[1] >= num_objects) fail(where, fmt::format("unknown object {}", pair[1]));
      p.initial_resident.push_back({pair[0], pair[1]});
    }
    p.steps.reserve(steps.size());
    for (size_t i = 0; i < steps.size(); ++i) {
      const std::string where = fmt::format("steps[{}]", i);
      const json& s = steps[i];
      if (!s.is_array() || s.size() < 3 || !s[0].is_string())
        fail(where, "expected [kind, subject, (object,) [waits]]");
      const std::string kind = s[0];
      Step st;
      size_t waits_at = 3;
      if (kind == "compute") {
        st = Step::run(StepKind::kCompute,
                       static_cast<OpId>(integer(s[1], where + "[1]", 0, m - 1)));
        waits_at = 2;
      } else if (kind == "recompute") {
        if (version < 2)
          fail(where, "a recompute step needs version 2 of the plan format (this plan says 1)");
        if (s.size() != 4) fail(where, "expected [\"recompute\", op, [objects], [waits]]");
        st = Step::run(StepKind::kRecompute,
                       static_cast<OpId>(integer(s[1], where + "[1]", 0, m - 1)));
        const auto objs = ints<ObjectId>(s[2], where + "[2]", num_step_slots(g_.ops[st.op()], true),
                                         0, num_objects - 1);
        st.obj_begin = static_cast<int32_t>(p.recompute_objects.size());
        p.recompute_objects.insert(p.recompute_objects.end(), objs.begin(), objs.end());
        st.obj_end = static_cast<int32_t>(p.recompute_objects.size());
      } else {
        StepKind k = StepKind::kDrop;
        if (kind == "swap_in")
          k = StepKind::kSwapIn;
        else if (kind == "swap_out")
          k = StepKind::kSwapOut;
        else if (kind != "drop")
          fail(where + "[0]", fmt::format("unknown step kind \"{}\"", kind));
        if (s.size() != 4) fail(where, "expected [kind, tensor, object, [waits]]");
        st = Step::move(k, static_cast<TensorId>(integer(s[1], where + "[1]", 0, n - 1)),
                        static_cast<ObjectId>(integer(s[2], where + "[2]", 0, num_objects - 1)));
      }
      if (s.size() != waits_at + 1) fail(where, "wrong number of entries");
      const auto waits = ints<StepId>(s[waits_at], fmt::format("{}[{}]", where, waits_at), -1, 0,
                                      static_cast<int64_t>(i) - 1);
      st.wait_begin = static_cast<int32_t>(p.waits.size());
      p.waits.insert(p.waits.end(), waits.begin(), waits.end());
      st.wait_end = static_cast<int32_t>(p.waits.size());
      p.steps.push_back(st);
    }
    return p;
  }

 private:
  const Graph& g_;
};

}  // namespace

uint64_t graph_fingerprint(const Graph& g) {
  uint64_t h = 1469598103934665603ull;
  h = fnv(h, g.tensors.size());
  for (const Tensor& t : g.tensors)
    h = fnv(fnv(h, t.bytes), static_cast<uint64_t>(t.kind));
  h = fnv(h, g.ops.size());
  for (const Op& op : g.ops) {
    h = fnv(h, op.workspace_bytes);
    for (auto* list : {&op.outputs, &op.inputs, &op.updates}) {
      h = fnv(h, list->size());
      for (TensorId x : *list)
        h = fnv(h, x);
    }
  }
  return h;
}

std::string plan_to_json(const Graph& g, const Plan& p) {
  std::string out;
  out.reserve(64 * p.steps.size() + 16 * p.access_objects.size() + 4096);
  out += fmt::format(
      "{{\"format\":\"swapadvisor-plan\",\"version\":2,\"method\":{},\n"
      "\"graph\":{{\"name\":{},\"ops\":{},\"tensors\":{},\"fingerprint\":\"{:016x}\"}},\n"
      "\"memory_budget\":{},\n\"order\":[{}],\n",
      json(p.method).dump(), json(g.name).dump(), g.num_ops(), g.num_tensors(),
      graph_fingerprint(g), p.memory_budget, fmt::join(p.order, ","));
  if (p.data_parallel.active())
    out += fmt::format(
        "\"data_parallel\":{{\"ranks\":{},\"shard_optimizer\":{},\"bucket_bytes\":{}}},\n",
        p.data_parallel.ranks, p.data_parallel.shard_optimizer, p.data_parallel.bucket_bytes);
  if (p.host_budget > 0)  // Note [Host tier]: absent means unlimited, nothing on NVMe
    out += fmt::format("\"host_budget\":{},\n\"nvme_tensors\":[{}],\n", p.host_budget,
                       fmt::join(p.nvme_tensors, ","));
  out += fmt::format("\"allocator\":\"{}\",\n", to_string(p.allocator));
  if (p.allocator == Allocator::kArena) {
    out += "\"objects\":[";
    for (size_t i = 0; i < p.objects.size(); ++i)
      out += fmt::format("{}[{},{}]", i ? "," : "", p.objects[i].offset, p.objects[i].bytes);
    out += "],\n";
  } else {
    out += fmt::format("\"pool\":{{\"class_bytes\":[{}],\"class_count\":[{}]}},\n",
                       fmt::join(p.pool.class_bytes, ","), fmt::join(p.pool.class_count, ","));
    out += fmt::format("\"tensor_class\":[{}],\n\"workspace_class\":[{}],\n",
                       fmt::join(p.tensor_class, ","), fmt::join(p.workspace_class, ","));
  }
  out += "\"access_objects\":[";
  for (int o = 0; o < g.num_ops(); ++o)
    out += fmt::format("{}[{}]", o ? "," : "", fmt::join(p.objects_of(o), ","));
  out += "],\n\"initial_resident\":[";
  for (size_t i = 0; i < p.initial_resident.size(); ++i)
    out += fmt::format("{}[{},{}]", i ? "," : "", p.initial_resident[i].tensor,
                       p.initial_resident[i].object);
  out += "],\n\"steps\":[\n";
  for (StepId s = 0; s < p.num_steps(); ++s) {
    const Step& st = p.steps[s];
    if (st.kind == StepKind::kCompute)
      out += fmt::format("[\"compute\",{},[{}]]", st.op(), fmt::join(p.waits_of(s), ","));
    else if (st.kind == StepKind::kRecompute)
      out += fmt::format("[\"recompute\",{},[{}],[{}]]", st.op(),
                         fmt::join(p.objects_of_step(s), ","), fmt::join(p.waits_of(s), ","));
    else
      out += fmt::format("[\"{}\",{},{},[{}]]", to_string(st.kind), st.tensor(), st.object,
                         fmt::join(p.waits_of(s), ","));
    out += s + 1 < p.num_steps() ? ",\n" : "\n";
  }
  out += "]}\n";
  return out;
}

Plan parse_plan(const Graph& g, std::string_view text, std::string_view origin) {
  return PlanReader(g, origin).read(parse_json(text, origin));
}

Plan parse_plan(std::string_view text, std::string_view origin,
                const std::function<const Graph&(const DataParallel&)>& graph_for) {
  const json doc = parse_json(text, origin);
  const Graph& g = graph_for(PlanFieldReader(origin).data_parallel(doc));
  return PlanReader(g, origin).read(doc);
}

void write_plan(const Graph& g, const Plan& p, const std::string& path) {
  write_file(path, plan_to_json(g, p));
}

void write_verified_plan(const Graph& g, const Plan& p, const std::string& path) {
  const VerifyResult v = verify_plan(g, p);
  SA_CHECK(v.ok, "the {} plan does not verify, so it was not written to {}: {}",
           p.method.empty() ? "new" : p.method, path, v.violation);
  write_plan(g, p, path);
}

Plan read_plan(const Graph& g, const std::string& path) {
  return parse_plan(g, read_file(path), path);
}

}  // namespace sa
