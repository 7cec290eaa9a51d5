#pragma once
// An enum's names listed once: a constexpr table of {value, name} that both the enum's name
// function and its parser read, so a new value is one row and the parser's "expected ..." list
// can never disagree with the names it accepts.
//
//   constexpr EnumName<LrDecay> kLrDecayNames[] = {{LrDecay::cosine, "cosine"}, ...};
//   name_of(kLrDecayNames, d)                          -> "cosine"
//   parse_of(kLrDecayNames, text, "learning-rate schedule")
//     -> throws "unknown learning-rate schedule 'x' (expected cosine, linear or constant)"
//
// The table's order is the order the error message lists the names in.
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "tinylm/core/error.h"

namespace tinylm {

template <class E>
struct EnumName {
  E value;
  std::string_view name;
};

// The name of `value`, or `otherwise` when the table lacks it (a value cast from a bad number).
template <class E, size_t N>
constexpr std::string_view name_of(const EnumName<E> (&table)[N], E value,
                                   std::string_view otherwise = "?") {
  for (const EnumName<E>& e : table) {
    if (e.value == value) return e.name;
  }
  return otherwise;
}

// The value named `text` (exactly, case included), or nullopt.
template <class E, size_t N>
constexpr std::optional<E> find_named(const EnumName<E> (&table)[N], std::string_view text) {
  for (const EnumName<E>& e : table) {
    if (e.name == text) return e.value;
  }
  return std::nullopt;
}

// "a, b or c": the table's names in order, as error messages list them (`last` before the last
// name: " or ", or ", " for a plain list).
template <class E, size_t N>
std::string names_list(const EnumName<E> (&table)[N], std::string_view last = " or ") {
  std::string s;
  for (size_t i = 0; i < N; ++i) {
    if (i > 0) s += i + 1 == N ? last : ", ";
    s += table[i].name;
  }
  return s;
}

// The value named `text`; otherwise throws Error "unknown <what> '<text>' (expected a, b or c)".
template <class E, size_t N>
E parse_of(const EnumName<E> (&table)[N], std::string_view text, std::string_view what) {
  if (const std::optional<E> e = find_named(table, text)) return *e;
  fail("unknown ", what, " '", text, "' (expected ", names_list(table), ")");
}

}  // namespace tinylm
