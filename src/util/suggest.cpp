#include "util/suggest.h"

#include <algorithm>
#include <cctype>
#include <vector>

namespace sa {
namespace {

int low(char c) {
  return std::tolower(static_cast<unsigned char>(c));
}

}  // namespace

bool same_letters(std::string_view a, std::string_view b) {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) { return low(x) == low(y); });
}

int edit_distance(std::string_view a, std::string_view b) {
  const size_t n = a.size(), m = b.size();
  // Three rows of the optimal-string-alignment table.
  std::vector<int> prev2(m + 1), prev(m + 1), cur(m + 1);
  for (size_t j = 0; j <= m; ++j)
    prev[j] = static_cast<int>(j);
  for (size_t i = 1; i <= n; ++i) {
    cur[0] = static_cast<int>(i);
    for (size_t j = 1; j <= m; ++j) {
      const int cost = low(a[i - 1]) == low(b[j - 1]) ? 0 : 1;
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost});
      if (i > 1 && j > 1 && low(a[i - 1]) == low(b[j - 2]) && low(a[i - 2]) == low(b[j - 1]))
        cur[j] = std::min(cur[j], prev2[j - 2] + 1);
    }
    std::swap(prev2, prev);
    std::swap(prev, cur);
  }
  return prev[m];
}

std::optional<std::string> closest(std::string_view word, std::span<const std::string> candidates) {
  // Long inputs are not typos of a name; comparing them would only cost.
  if (word.empty() || word.size() > 200) return std::nullopt;
  const int allowed = std::max<int>(1, static_cast<int>(word.size()) / 3);
  std::optional<std::string> best;
  int best_d = allowed + 1;
  for (const std::string& c : candidates) {
    if (c == word) continue;
    int d = edit_distance(word, c);
    // "--mem" for "--memory": a prefix is a likely abbreviation.
    if (word.size() >= 3 && c.size() > word.size() && c.compare(0, word.size(), word) == 0)
      d = std::min(d, 1);
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  return best;
}

}  // namespace sa
