#include <gtest/gtest.h>

#include <set>
#include <vector>

#include "runtime/synthetic.h"
#include "runtime/synthetic_op.h"

namespace sa::synthetic {
namespace {

// Samples are distinct, inside the tensor, cover the first and last words
// and every whole 4 KiB page.
TEST(RuntimeSynthetic, SamplesCoverEveryPageWithoutOverlap) {
  for (int64_t bytes : {1, 5, 8, 9, 64, 512, 513, 520, 4096, 4100, 8192, 12289, 1 << 20,
                        (1 << 20) + 3, 10'000'000}) {
    const int64_t n = num_samples(bytes);
    ASSERT_GT(n, 0) << bytes;
    std::set<int64_t> seen;
    std::set<int64_t> pages;
    for (int64_t i = 0; i < n; ++i) {
      int len = 0;
      const int64_t off = sample_offset(bytes, i, &len);
      ASSERT_EQ(len, bytes < 8 ? bytes : 8) << bytes;
      ASSERT_GE(off, 0);
      ASSERT_LE(off + len, bytes) << bytes << " sample " << i;
      ASSERT_EQ(off % 8, 0);
      ASSERT_TRUE(seen.insert(off).second)
          << bytes << ": sample " << i << " repeats offset " << off;
      pages.insert(off / kPageBytes);
    }
    EXPECT_TRUE(seen.count(0)) << bytes;
    if (bytes >= 8) {
      EXPECT_TRUE(seen.count(8 * (bytes / 8 - 1))) << bytes;
    }
    for (int64_t p = 0; p < bytes / kPageBytes; ++p)
      EXPECT_TRUE(pages.count(p)) << bytes << ": page " << p << " has no sample";
  }
  EXPECT_EQ(num_samples(0), 0);
}

TEST(RuntimeSynthetic, PartialWordsAreMasked) {
  std::vector<std::byte> buf(16, std::byte{0xee});
  init_buffer(buf.data(), 3, 7);
  // Only the 3 bytes of the tensor are written.
  EXPECT_EQ(buf[3], std::byte{0xee});
  uint64_t v = 0;
  std::memcpy(&v, buf.data(), 3);
  EXPECT_EQ(v, mask_word(init_word(7, 0), 3));
}

// The op's outputs depend on every sample of its inputs: changing one word
// anywhere in a sampled position changes the output checksum.
TEST(RuntimeSynthetic, OutputsDependOnEverySample) {
  const int64_t bytes = 3 * kPageBytes + 40;
  std::vector<std::byte> mem(2 * bytes);
  init_buffer(mem.data(), bytes, 1);
  std::vector<KernelAccess> acc(2);
  acc[0].offset = bytes;  // output
  acc[0].bytes = bytes;
  acc[0].role = Role::kOutput;
  acc[0].slot = 0;
  acc[1].offset = 0;  // input
  acc[1].bytes = bytes;
  acc[1].role = Role::kInput;
  BufferMem m{mem.data()};
  uint64_t base = 0;
  run_op(3, acc, m, &base);
  for (int64_t i = 0; i < num_samples(bytes); ++i) {
    int len = 0;
    const int64_t off = sample_offset(bytes, i, &len);
    mem[off] ^= std::byte{1};
    uint64_t sum = 0;
    run_op(3, acc, m, &sum);
    EXPECT_NE(sum, base) << "sample " << i;
    mem[off] ^= std::byte{1};
  }
  uint64_t again = 0;
  run_op(3, acc, m, &again);
  EXPECT_EQ(again, base);
}

}  // namespace
}  // namespace sa::synthetic
