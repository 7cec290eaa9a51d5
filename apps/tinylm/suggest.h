#pragma once
// "Did you mean": the nearest of a command's names to a mistyped one, for the usage errors of
// main.cpp (unknown commands and flags).
#include <cstddef>
#include <string>
#include <vector>

namespace tinylm::cli {

// The Levenshtein distance between a and b (insertions, deletions and substitutions of a byte).
size_t edit_distance(const std::string& a, const std::string& b);

// The closest of `names` to `word`: the one name it begins (at least 3 characters: "--temp"),
// else the nearest when it is close enough to be a likely typo (at most max(3, |word| / 3)
// edits; a tie goes to the first, or to a shorter later one); "" otherwise.
std::string closest(const std::string& word, const std::vector<std::string>& names);

// The first argument of argv[from..argc) that is a flag ("--x", or "-x" with a letter: not a
// negative number) and is not one of `flags` (the part before any "="), stopping at "--":
// "--step" of "--step 10"; "" when there is none.
std::string unknown_flag(const std::vector<std::string>& flags, int argc, char** argv, int from);

}  // namespace tinylm::cli
