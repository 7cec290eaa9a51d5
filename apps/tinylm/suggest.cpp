#include "suggest.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <string_view>

#include "tinylm/train/nanogpt_keys.h"

namespace tinylm::cli {

size_t edit_distance(const std::string& a, const std::string& b) {
  // Three rows of the table: an adjacent transposition looks two rows back.
  std::vector<size_t> before(b.size() + 1), prev(b.size() + 1), row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      row[j] = std::min({prev[j] + 1, row[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1])});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        row[j] = std::min(row[j], before[j - 2] + 1);
    }
    std::swap(before, prev);
    std::swap(prev, row);
  }
  return prev[b.size()];
}

namespace {

// A name as it is compared: without its leading dashes, underscores read as dashes (--n_layer
// is --n-layer's spelling in Python's flags).
std::string bare(const std::string& name) {
  std::string s = name.substr(std::min(name.find_first_not_of('-'), name.size()));
  std::replace(s.begin(), s.end(), '_', '-');
  return s;
}

}  // namespace

std::string closest(const std::string& word, const std::vector<std::string>& names) {
  if (word.size() <= 2) return "";  // "-n": any other letter is one edit away
  const std::string w = bare(word);
  if (w.empty()) return "";  // "---": no letters to compare
  // A word that begins names is one of them cut short (--temp, --max): the nearest.
  std::string best;
  size_t best_d = SIZE_MAX;
  const auto consider = [&](const std::string& n, size_t d) {
    if (d < best_d || (d == best_d && n.size() < best.size())) {
      best = n;
      best_d = d;
    }
  };
  for (const std::string& n : names) {
    const std::string b = bare(n);
    if (b.size() > w.size() && b.compare(0, w.size(), w) == 0) consider(n, edit_distance(w, b));
  }
  if (!best.empty()) return best;
  // Else the nearest, if it is near enough to be a typo: an edit for every four letters.
  const size_t most = std::max<size_t>(1, w.size() / 4);
  for (const std::string& n : names) {
    const size_t d = edit_distance(w, bare(n));
    if (d <= most) consider(n, d);
  }
  return best;
}

std::string nanogpt_flag_hint(const std::string& command, const std::string& flag) {
  if (flag.size() < 3 || flag[1] != '-') return "";  // train.py's keys are words: --key=value
  const std::string_view key = std::string_view(flag).substr(2);
  if (command == "train") return train::nanogpt_hint(train::NanoGptScript::train, key, "--");
  if (command == "generate") return train::nanogpt_hint(train::NanoGptScript::sample, key, "--");
  return "";
}

std::string argument_hint(const std::string& command, const std::string& arg) {
  if (command != "train") return "";
  if (arg.ends_with(".py")) return "; " + std::string(train::kNanoGptConfigHint);
  if (arg.ends_with(".toml") || arg.ends_with(".json")) return "; give it as --config " + arg;
  return "";
}

std::string unknown_flag(const std::vector<std::string>& flags, int argc, char** argv, int from) {
  for (int i = from; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--") break;
    if (a.size() < 2 || a[0] != '-' ||
        (a[1] != '-' && !std::isalpha(static_cast<unsigned char>(a[1]))))
      continue;  // a value (negative numbers included)
    a = a[1] == '-' ? a.substr(0, a.find('=')) : a.substr(0, 2);  // (-n5 is -n 5)
    if (std::find(flags.begin(), flags.end(), a) == flags.end()) return a;
  }
  return "";
}

}  // namespace tinylm::cli
