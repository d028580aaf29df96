#pragma once
// Note [Input limits]
// -------------------
// Ceilings on what an input may make swapadvisor allocate or compute, checked
// before the work is done, so that a hostile or broken file (a gzip bomb, a
// 2 GB array of zeros, an op that takes 10^300 us) ends in a clear error
// naming the file instead of exhausting memory, hanging or overflowing.
// Each is far above what a real input needs (a 30,000-op graph file is about
// 6 MB of JSON holding about 500,000 values); docs/graph-format.md, "Limits",
// lists them for users.

#include <cstdint>

namespace sa {

// Largest tensor, workspace, total or device memory the tools accept: 2^50
// bytes (1 PiB). Far above any device, and small enough that sums of sizes
// cannot overflow.
inline constexpr int64_t kMaxBytes = int64_t{1} << 50;

// A JSON input (graph, plan, device profile, exec file, a values file's
// header): at most this many bytes of text, after gunzip.
constexpr int64_t kMaxJsonInputBytes = int64_t{256} << 20;  // 256 MiB

// A parsed JSON document: at most this much memory, estimated while parsing
// from the values read (util/json.cpp: every value, key and string counted
// with the memory nlohmann keeps for it).
constexpr int64_t kMaxJsonDocumentBytes = int64_t{512} << 20;  // 512 MiB

// An op's time, given (time_us) or estimated from the device (flops,
// bytes_accessed, launch overhead) and scaled (--compute-scale): at most
// 10^12 us, 11.6 days. The simulator adds such times; far larger ones (or
// infinity) would make its sums meaningless.
constexpr double kMaxOpUs = 1e12;

// A generated graph (the zoo) has at most this many ops and tensors, checked
// from the model's parameters before it is built (zoo/zoo.cpp), so that no
// model name and --seq-len can exhaust memory (rnn-1000-1k at 100,000 steps
// would be 600 million ops) and every zoo graph, written, is one the graph
// reader accepts: the largest at these ceilings (brnn-1-1k at 16,600 steps,
// mlp-16000, nasnet-219, with adam and fp16: 168k-199k ops, 240k-249k
// tensors) are 58-67 MB of JSON and read within the limits above, which an
// unrolled LSTM passes at about 280,000 ops.
constexpr int kMaxGeneratedOps = 200'000;
constexpr int kMaxGeneratedTensors = 250'000;

// Threads any option may ask for (search threads, ATen intra-op threads).
constexpr int kMaxThreads = 1024;

}  // namespace sa
