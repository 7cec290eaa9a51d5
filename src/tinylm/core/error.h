#pragma once
// tinylm::Error is what every library boundary throws: one line that names the file, the
// tensor or the option, and the problem. The CLI prints what() and exits non-zero.
#include <cstdint>
#include <initializer_list>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

namespace tinylm {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Concatenates its arguments with operator<< into one string.
template <class... Args>
std::string cat(Args&&... args) {
  std::ostringstream os;
  ((os << std::forward<Args>(args)), ...);
  return os.str();
}

template <class... Args>
[[noreturn]] void fail(Args&&... args) {
  throw Error(cat(std::forward<Args>(args)...));
}

// Cheap boundary check: throws Error(message) when cond is false. The message's arguments are
// evaluated whether or not it fails: where one costs (a quoted token, a JSON dump) in a loop over
// a file's entries, write `if (!cond) fail(...)` instead.
template <class... Args>
void check(bool cond, Args&&... args) {
  if (!cond) fail(std::forward<Args>(args)...);
}

// A model shape's sizes that must be at least 1: "<where>: <name> must be positive, got <value>"
// for the first that is not.
struct Size {
  std::string_view name;
  int64_t value;
};
inline void check_positive(std::string_view where, std::initializer_list<Size> sizes) {
  for (const Size& s : sizes)
    check(s.value >= 1, where, ": ", s.name, " must be positive, got ", s.value);
}

}  // namespace tinylm
