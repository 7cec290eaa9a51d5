#pragma once
// A unit inside a kernel level (the bf16 products' vdpbf16ps or AMX, the int8 products'
// vpmaddubsw or vpdpbusd), chosen once: the environment variable names one, else the best the
// CPU offers. Thread-safe to resolve; after that one relaxed load per call.
#include <array>
#include <atomic>
#include <cstdlib>
#include <mutex>
#include <string>
#include <string_view>

#include "tinylm/core/error.h"

namespace tinylm::kernels {

template <class Unit, size_t N = 2>
class UnitChoice {
 public:
  // env: the variable's name; units: every unit, named by name(u); best(): the default;
  // offered(u): whether this CPU (and OS) has u, else `missing` names what it lacks.
  struct Spec {
    const char* env;
    std::array<Unit, N> units;
    std::string_view (*name)(Unit);
    Unit (*best)();
    bool (*offered)(Unit);
    const char* missing;  // "AVX512-VNNI"
  };
  constexpr explicit UnitChoice(const Spec& spec) : spec_(spec) {}

  Unit get() {
    if (const int u = unit_.load(std::memory_order_relaxed); u >= 0) return static_cast<Unit>(u);
    const std::lock_guard<std::mutex> lock(mu_);
    if (const int u = unit_.load(); u >= 0) return static_cast<Unit>(u);
    const char* value = std::getenv(spec_.env);
    const Unit u = value && *value ? parse(value) : spec_.best();
    unit_.store(static_cast<int>(u));
    return u;
  }

  // Throws Error for a unit the CPU lacks.
  void set(Unit u) { unit_.store(static_cast<int>(parse(spec_.name(u)))); }

 private:
  Unit parse(std::string_view name) const {
    std::string known;
    for (Unit u : spec_.units) {
      known += cat(known.empty() ? "" : " or ", spec_.name(u));
      if (name != spec_.name(u)) continue;
      check(spec_.offered(u), spec_.env, "=", name, ": this CPU (or OS) does not offer ",
            spec_.missing);
      return u;
    }
    fail(spec_.env, "=", name, ": unknown unit (", known, ")");
  }

  Spec spec_;
  std::atomic<int> unit_{-1};  // -1 until resolved
  std::mutex mu_;
};

}  // namespace tinylm::kernels
