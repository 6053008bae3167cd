// Median: the middle of a benchmark's samples (the mean of the two middle
// ones for an even count; 0 for none), the figure the benchmarks quote
// because this box is noisy.
//
// Thread-safety: a free function on a copy.
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

namespace feedd::bench {

inline double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  if (n == 0) return 0;
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace feedd::bench
