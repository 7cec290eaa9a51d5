// core/enum_names.h: one {value, name} table per enum behind its name function and parser, and
// the exact one-line errors the parsers built on it give.
#include "tinylm/core/enum_names.h"

#include <gtest/gtest.h>

#include <string>

#include "tinylm/core/dtype.h"
#include "tinylm/core/error.h"
#include "tinylm/kernels/cpu/isa.h"
#include "tinylm/optim/schedule.h"
#include "tinylm/train/loop.h"

namespace tinylm {
namespace TINYLM_TEST_LOCAL {

enum class Color : uint8_t { red, green, blue };
constexpr EnumName<Color> kColors[] = {
    {Color::red, "red"}, {Color::green, "green"}, {Color::blue, "blue"}};
constexpr EnumName<Color> kOne[] = {{Color::red, "red"}};
constexpr EnumName<Color> kTwo[] = {{Color::red, "red"}, {Color::green, "green"}};

// The message `parse` throws.
template <class F>
std::string error_of(F parse) {
  try {
    parse();
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "did not throw";
  return "";
}

TEST(EnumNames, NameAndParseReadOneTable) {
  static_assert(name_of(kColors, Color::green) == "green");
  static_assert(*find_named(kColors, "blue") == Color::blue);
  static_assert(!find_named(kColors, "Blue").has_value());
  EXPECT_EQ(name_of(kColors, static_cast<Color>(7)), "?");
  EXPECT_EQ(name_of(kColors, static_cast<Color>(7), "unknown"), "unknown");
  for (const EnumName<Color>& c : kColors) EXPECT_EQ(parse_of(kColors, c.name, "color"), c.value);
}

TEST(EnumNames, ListsNamesAsMessagesDo) {
  EXPECT_EQ(names_list(kOne), "red");
  EXPECT_EQ(names_list(kTwo), "red or green");
  EXPECT_EQ(names_list(kColors), "red, green or blue");
  EXPECT_EQ(error_of([] { parse_of(kColors, "mauve", "color"); }),
            "unknown color 'mauve' (expected red, green or blue)");
}

// The parsers' messages as they were before the tables (issue 36): the tables' order is the
// order these list the names in.
TEST(EnumNames, ParsersKeepTheirMessages) {
  EXPECT_EQ(
      error_of([] { parse_dtype("f8"); }),
      "unknown dtype 'f8' (expected f32, f16, bf16, i32, f64, q8_0, q4_0, q6_k, q4_k or q5_k)");
  EXPECT_EQ(error_of([] { optim::parse_lr_decay("step"); }),
            "unknown learning-rate schedule 'step' (expected cosine, linear or constant)");
  EXPECT_EQ(error_of([] { train::parse_optimizer("adam"); }),
            "unknown optimizer 'adam' (expected adamw or sgd)");
  EXPECT_EQ(error_of([] { train::parse_decay_scope("none"); }),
            "unknown weight-decay scope 'none' (expected matrices, embeddings or all)");
  EXPECT_EQ(error_of([] {
              kernels::parse_supported_isa("sse9");
            }).rfind("TINYLM_ISA=sse9: unknown level (supported here: generic", 0),
            0u);
}

TEST(EnumNames, NameFunctionsRoundTrip) {
  for (const char* n : {"cosine", "linear", "constant"})
    EXPECT_EQ(optim::lr_decay_name(optim::parse_lr_decay(n)), n);
  for (const char* n : {"adamw", "sgd"})
    EXPECT_EQ(train::optimizer_name(train::parse_optimizer(n)), n);
  for (const char* n : {"matrices", "embeddings", "all"})
    EXPECT_EQ(train::decay_scope_name(train::parse_decay_scope(n)), n);
  for (kernels::Isa isa : kernels::supported_isas())
    EXPECT_EQ(kernels::parse_supported_isa(kernels::isa_name(isa)), isa);
  EXPECT_EQ(kernels::isa_name(kernels::Isa::avx512), "avx512");
}

}  // namespace TINYLM_TEST_LOCAL
}  // namespace tinylm
