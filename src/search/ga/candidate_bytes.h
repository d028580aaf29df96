#pragma once
// Candidates and search state as bytes between the processes of one build
// (Note [Islands] across processes, Note [Shared evaluations]): a reader
// checks every length against what it was given.
#include <cstring>
#include <string>
#include <vector>

#include "search/ga/search.h"

namespace sa::ga {

// A candidate's genes and time as bytes (between processes of one build).
class ByteWriter {
 public:
  template <typename T>
  void put(const T& v) {
    const auto* p = reinterpret_cast<const char*>(&v);
    out_.append(p, sizeof(T));
  }
  template <typename T>
  void put_all(const std::vector<T>& v) {
    put(static_cast<int64_t>(v.size()));
    out_.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
  }
  void put_text(const std::string& t) {
    put(static_cast<int64_t>(t.size()));
    out_.append(t);
  }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

class ByteReader {
 public:
  explicit ByteReader(const std::string& in) : in_(in) {}
  template <typename T>
  T get() {
    T v;
    SA_CHECK(at_ + sizeof(T) <= in_.size(), "a message from another process ends early");
    std::memcpy(&v, in_.data() + at_, sizeof(T));
    at_ += sizeof(T);
    return v;
  }
  template <typename T>
  std::vector<T> get_all() {
    const auto n = get<int64_t>();
    SA_CHECK(n >= 0 && at_ + static_cast<size_t>(n) * sizeof(T) <= in_.size(),
             "a message from another process ends early");
    std::vector<T> v(static_cast<size_t>(n));
    if (n > 0) std::memcpy(v.data(), in_.data() + at_, static_cast<size_t>(n) * sizeof(T));
    at_ += static_cast<size_t>(n) * sizeof(T);
    return v;
  }
  std::string get_text() {
    const std::vector<char> v = get_all<char>();
    return std::string(v.begin(), v.end());
  }
  bool done() const { return at_ == in_.size(); }

 private:
  const std::string& in_;
  size_t at_ = 0;
};

// comm.all_gather, checked: one text from every process, in rank order.
inline std::vector<std::string> gather_all(const IslandComm& comm, std::string text) {
  std::vector<std::string> all = comm.all_gather(text);
  SA_CHECK(static_cast<int>(all.size()) == comm.size, "{} processes answered, not {}", all.size(),
           comm.size);
  return all;
}

inline std::string pack(const Candidate& c) {
  ByteWriter p;
  p.put_all(c.order);
  p.put_all(c.alloc.cls);
  p.put_all(c.alloc.cnt);
  p.put(c.layout);
  p.put(c.home);
  p.put_all(c.recompute);
  p.put(c.recomputes);
  p.put(c.dtr);
  p.put(c.dead_depth);
  p.put(c.time_us);
  return p.take();
}

inline Candidate unpack(const std::string& text) {
  ByteReader u(text);
  Candidate c;
  c.order = u.get_all<OpId>();
  c.alloc.cls = u.get_all<ClassId>();
  c.alloc.cnt = u.get_all<int32_t>();
  c.layout = u.get<MemoryLayout>();
  c.home = u.get<bool>();
  c.recompute = u.get_all<uint8_t>();
  c.recomputes = u.get<bool>();
  c.dtr = u.get<bool>();
  c.dead_depth = u.get<int>();
  c.time_us = u.get<double>();
  return c;
}

}  // namespace sa::ga
