#include "suggest.h"

#include <algorithm>
#include <cctype>

namespace tinylm::cli {

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] != b[j - 1] ? 1 : 0)});
      diag = up;
    }
  }
  return row[b.size()];
}

std::string closest(const std::string& word, const std::vector<std::string>& names) {
  if (word.size() <= 2) return "";  // "-n": any other letter is one edit away
  // A word that begins exactly one name is that name cut short (--temp, --max).
  std::string prefixed;
  int prefixes = 0;
  for (const std::string& n : names) {
    if (n.size() > word.size() && n.compare(0, word.size(), word) == 0 && word.size() > 2) {
      prefixed = n;
      ++prefixes;
    }
  }
  if (prefixes == 1) return prefixed;
  std::string best;
  size_t best_d = std::max<size_t>(3, word.size() / 3) + 1;
  for (const std::string& n : names) {
    const size_t d = edit_distance(word, n);
    if (d < best_d || (d == best_d && !best.empty() && n.size() < best.size())) {
      best = n;
      best_d = d;
    }
  }
  return best;
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
