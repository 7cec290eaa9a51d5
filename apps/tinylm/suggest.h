#pragma once
// "Did you mean": the nearest of a command's names to a mistyped one, for the usage errors of
// main.cpp (unknown commands and flags).
#include <cstddef>
#include <string>
#include <vector>

namespace tinylm::cli {

// The edit distance between a and b: insertions, deletions and substitutions of a byte, and
// swaps of two adjacent ones ("trian": train), each one edit.
size_t edit_distance(const std::string& a, const std::string& b);

// The closest of `names` to `word`, compared without their leading dashes and with underscores
// read as dashes: of the names it begins (at least 3 characters: "--temp"), the nearest; else
// the nearest if it is a likely typo (an edit for every four letters, at least one; a tie goes
// to the first, or to a shorter later one); "" otherwise.
std::string closest(const std::string& word, const std::vector<std::string>& names);

// What a user of nanoGPT meant by a flag `command` does not take ("--batch_size" of "train":
// "nanoGPT's batch_size is --batch here"); "" for any other flag or command.
std::string nanogpt_flag_hint(const std::string& command, const std::string& flag);

// What an argument `command` does not take may have meant, "" when nothing: for train, a
// config file given without --config ("; give it as --config FILE", or for a nanoGPT .py
// config, that it is not read and which of configs/ is its recipe).
std::string argument_hint(const std::string& command, const std::string& arg);

// The first argument of argv[from..argc) that is a flag ("--x", or "-x" with a letter: not a
// negative number) and is not one of `flags` (the part before any "="), stopping at "--":
// "--step" of "--step 10"; "" when there is none.
std::string unknown_flag(const std::vector<std::string>& flags, int argc, char** argv, int from);

}  // namespace tinylm::cli
