#pragma once
// Integer flags read strictly. CLI11 reads integers with strtoull/strtoll in base 0, so a value
// out of range becomes the type's largest (`--seed 18446744073709551616` is 2^64 - 1), `-1`
// wraps to 2^64 - 1 for an unsigned flag, and `010` is octal 8, all without a word. This
// validator admits plain decimal within T's range only: anything else is a usage error.
#include <CLI/CLI.hpp>
#include <charconv>
#include <limits>
#include <string>

namespace tinylm::cli {

template <class T>
CLI::Validator decimal_integer() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        T value{};
        const char* first = text.data();
        const char* last = text.data() + text.size();
        const auto [end, ec] = std::from_chars(first, last, value);
        const std::string digits = text.substr(text.starts_with('-') ? 1 : 0);
        const bool leading_zero = digits.size() > 1 && digits.front() == '0';
        if (ec == std::errc() && end == last && !leading_zero) return "";
        return "'" + text + "' is not a decimal integer in [" +
               std::to_string(std::numeric_limits<T>::min()) + ", " +
               std::to_string(std::numeric_limits<T>::max()) + "]";
      },
      "INT");
}

// A number above `min` (or at least `min`, with or_equal): "must be > 0, not -1" (CLI11's own
// range checks print the double's whole range).
inline CLI::Validator above(double min, bool or_equal = false) {
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        double value = 0;
        const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
        if (ec == std::errc() && end == text.data() + text.size() &&
            (or_equal ? value >= min : value > min))
          return "";
        std::string bound = std::to_string(min);
        bound.erase(bound.find_last_not_of('0') + 1);
        if (bound.back() == '.') bound.pop_back();
        return "must be " + std::string(or_equal ? ">= " : "> ") + bound + ", not '" + text + "'";
      },
      "");
}

}  // namespace tinylm::cli
