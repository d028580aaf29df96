#pragma once
// "Did you mean ...?" for names a user mistyped: flags, devices, models.
//
//   closest("--memroy-fraction", {"--memory", "--memory-fraction"})
//     == "--memory-fraction"

#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace sa {

// The edit distance (insertions, deletions, substitutions and swaps of two
// neighbours), comparing letters case-insensitively.
int edit_distance(std::string_view a, std::string_view b);

// Equal but for the case of ASCII letters ("V100-16GB", "v100-16gb").
bool same_letters(std::string_view a, std::string_view b);

// The candidate nearest to `word`, when it is near enough to be a likely
// typo: at most a third of the word's letters (and at least 1) wrong, or
// the word a prefix of it.
std::optional<std::string> closest(std::string_view word, std::span<const std::string> candidates);

}  // namespace sa
