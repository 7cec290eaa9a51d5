// The table's one test body (ops_table.h): each case at every kernel level, against its
// reference and its own first level. The ops_<group>_test.cpp files instantiate it.
#include "ops_table.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "test_util.h"
#include "tinylm/kernels/cpu/isa.h"

namespace tinylm::kernels::ops_table {
namespace TINYLM_TEST_LOCAL {

std::string fmt(double x) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.9g", x);
  return buf;
}

void compare(const Out& got, const Want& want) {
  ASSERT_EQ(got.values.size(), want.values.size()) << got.name;
  int64_t bad = 0;
  for (size_t i = 0; i < got.values.size(); ++i) {
    const double g = got.values[i], w = want.values[i];
    const bool ok = (std::isnan(g) && std::isnan(w)) || g == w ||
                    (!want.bound.empty() && std::abs(g - w) <= want.bound[i]);
    if (!ok && bad++ < 3) {
      ADD_FAILURE() << got.name << "[" << i << "] = " << fmt(g) << ", reference " << fmt(w)
                    << (want.bound.empty() ? std::string(" (exact)")
                                           : ", bound " + fmt(want.bound[i]));
    }
  }
  EXPECT_EQ(bad, 0) << got.name << ": " << bad << " of " << got.values.size() << " elements";
}

template <class T>
const T* find_named(const std::vector<T>& v, const std::string& name) {
  for (const T& x : v) {
    if (x.name == name) return &x;
  }
  return nullptr;
}

std::string first_difference(const Out& a, const Out& b) {
  if (a.bytes.size() != b.bytes.size()) {
    return std::to_string(a.bytes.size()) + " bytes against " + std::to_string(b.bytes.size());
  }
  const size_t stride = a.values.empty() ? 1 : a.bytes.size() / a.values.size();
  for (size_t i = 0; i < a.bytes.size(); ++i) {
    if (a.bytes[i] != b.bytes[i]) {
      const size_t e = i / stride;
      return "element " + std::to_string(e) + ": " + fmt(a.values[e]) + " vs " + fmt(b.values[e]);
    }
  }
  return "";
}

TEST_P(Kernel, MatchesReferenceWithTheSameBitsAtEveryLevel) {
  const OpCase& c = GetParam();
  if (c.once) {
    SCOPED_TRACE("double reference");
    c.once();
  }
  for (const Shape& s : c.shapes) {
    SCOPED_TRACE(describe(s));
    const std::vector<Want> want = c.reference(s);
    std::vector<Out> first;
    std::string first_level;
    const auto body = [&](Isa isa) {
      const std::vector<Out> got = c.run(s);
      for (const Out& o : got) {
        if (!o.same_as.empty()) {
          const Out* other = find_named(got, o.same_as);
          if (!other) {
            ADD_FAILURE() << o.name << ": no output " << o.same_as;
          } else if (o.bytes != other->bytes) {
            ADD_FAILURE() << o.name << " differs from " << o.same_as << " at "
                          << first_difference(o, *other);
          }
        } else if (const Want* w = find_named(want, o.name)) {
          compare(o, *w);
        } else {
          ADD_FAILURE() << o.name << ": no reference";
        }
      }
      for (const Want& w : want) {
        if (!find_named(got, w.name)) ADD_FAILURE() << w.name << ": not computed";
      }
      if (first.empty()) {
        first = got;
        first_level = isa_name(isa);
        return;
      }
      ASSERT_EQ(got.size(), first.size());
      for (size_t i = 0; i < got.size(); ++i) {
        EXPECT_TRUE(got[i].bytes == first[i].bytes)
            << got[i].name << " at level " << isa_name(isa) << " differs from " << first_level
            << " at " << first_difference(got[i], first[i]);
      }
    };
    // oneDNN fixes its instructions at its first product (matmul/gemm.h), so products held to
    // a tolerance run once, at the level in use.
    if (c.contract == Contract::tolerance) {
      body(active_isa());
    } else {
      test::for_each_isa(body);
    }
  }
}

}  // namespace TINYLM_TEST_LOCAL
}  // namespace tinylm::kernels::ops_table
