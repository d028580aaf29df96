// Measures MPI_Allreduce between the ranks of this host against the ring
// formula the simulator charges for one all-reduce (ring_all_reduce_us in
// plan/data_parallel.h): run with `mpirun -np 2 build/bench/bench_allreduce`.
// The link figures of the formula (latency, bandwidth) are fitted to the
// measurements by least squares on the relative error, so the ratio
// measured / formula at each size says how well the formula's shape (a
// latency term and a bandwidth term) fits this link.
// Float32 sums, as a gradient all-reduce does; median of 15 runs after 3
// warm-ups, each timed from a barrier to the slowest rank's end.

#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "plan/data_parallel.h"

namespace {

double median_us(MPI_Comm comm, std::vector<float>& buf) {
  std::vector<double> t;
  for (int k = 0; k < 18; ++k) {
    MPI_Barrier(comm);
    const double start = MPI_Wtime();
    MPI_Allreduce(MPI_IN_PLACE, buf.data(), static_cast<int>(buf.size()), MPI_FLOAT, MPI_SUM, comm);
    double us = (MPI_Wtime() - start) * 1e6, slowest = 0;
    MPI_Allreduce(&us, &slowest, 1, MPI_DOUBLE, MPI_MAX, comm);
    if (k >= 3) t.push_back(slowest);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  std::vector<int64_t> sizes;
  for (int64_t b = 8; b <= (int64_t{16} << 20); b *= 8)
    sizes.push_back(b);
  std::vector<double> measured;
  for (int64_t b : sizes) {
    std::vector<float> buf(static_cast<size_t>(b / 4) + (b < 4 ? 1 : 0), 1.0f);
    measured.push_back(median_us(MPI_COMM_WORLD, buf));
  }
  if (rank == 0 && size > 1) {
    // t = a + b * bytes, a = 2 (N-1) latency, b = 2 (N-1)/N / bandwidth:
    // least squares on the relative error (weights 1 / t), so that small
    // and large messages count alike.
    const double n = size;
    double sww = 0, swwx = 0, swwx2 = 0, swwy = 0, swwxy = 0;
    for (size_t i = 0; i < sizes.size(); ++i) {
      const double w = 1 / measured[i], x = static_cast<double>(sizes[i]), y = measured[i];
      sww += w * w, swwx += w * w * x, swwx2 += w * w * x * x;
      swwy += w * w * y, swwxy += w * w * x * y;
    }
    const double b = (sww * swwxy - swwx * swwy) / (sww * swwx2 - swwx * swwx);
    const double a = (swwy - b * swwx) / sww;
    const double latency = std::max(0.0, a / (2 * (n - 1)));
    const double gbps = 2 * (n - 1) / n / b / 1e3;
    std::printf("%d ranks; fitted: collective_latency_us %.2f, collective_gbps %.2f\n\n", size,
                latency, gbps);
    std::printf("| bytes | measured us | ring formula us | measured / formula |\n");
    std::printf("|---|---|---|---|\n");
    for (size_t i = 0; i < sizes.size(); ++i) {
      const double f = sa::ring_all_reduce_us(static_cast<double>(sizes[i]), size, gbps, latency);
      std::printf("| %lld | %.1f | %.1f | %.2f |\n", static_cast<long long>(sizes[i]), measured[i],
                  f, measured[i] / f);
    }
  }
  MPI_Finalize();
  return 0;
}
