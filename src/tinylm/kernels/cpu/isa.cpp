#include "tinylm/kernels/cpu/isa.h"

#include <cstdlib>
#include <mutex>
#include <optional>

#include "tinylm/core/enum_names.h"
#include "tinylm/core/error.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif
#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace tinylm::kernels {

namespace {

// Every level, lowest first, with its TINYLM_ISA name.
constexpr EnumName<Isa> kIsaNames[] = {
    {Isa::generic, "generic"}, {Isa::avx2, "avx2"}, {Isa::avx512, "avx512"}};

#if defined(TINYLM_X86_LEVELS) && (defined(__x86_64__) || defined(__i386__))
// XCR0: which register states the OS saves on a context switch.
uint64_t xgetbv0() {
  uint32_t lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (static_cast<uint64_t>(hi) << 32) | lo;
}

Isa detect_best() {
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return Isa::generic;
  const bool osxsave = c & (1u << 27), avx = c & (1u << 28), fma = c & (1u << 12),
             f16c = c & (1u << 29);
  if (!osxsave || !avx) return Isa::generic;
  const uint64_t xcr0 = xgetbv0();
  if ((xcr0 & 0x6) != 0x6) return Isa::generic;  // XMM and YMM state
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return Isa::generic;
  const bool avx2 = b & (1u << 5), avx512f = b & (1u << 16), avx512dq = b & (1u << 17),
             avx512bw = b & (1u << 30), avx512vl = b & (1u << 31);
  if (!avx2 || !fma || !f16c) return Isa::generic;
  // Opmask and the upper ZMM registers too.
  if (avx512f && avx512dq && avx512bw && avx512vl && (xcr0 & 0xe6) == 0xe6) return Isa::avx512;
  return Isa::avx2;
}

// Bit `bit` of register `reg` (0-3: EAX, EBX, ECX, EDX) of CPUID leaf.subleaf.
bool cpuid_bit(unsigned leaf, unsigned subleaf, int reg, int bit) {
  unsigned r[4];
  if (!__get_cpuid_count(leaf, subleaf, &r[0], &r[1], &r[2], &r[3])) return false;
  return (r[reg] >> bit) & 1u;
}
constexpr int kEax = 0, kEcx = 2, kEdx = 3;

bool detect_avx512_bf16() { return detect_best() == Isa::avx512 && cpuid_bit(7, 1, kEax, 5); }
bool detect_avx512_vnni() { return detect_best() == Isa::avx512 && cpuid_bit(7, 0, kEcx, 11); }
bool detect_avx_vnni() { return detect_best() != Isa::generic && cpuid_bit(7, 1, kEax, 4); }

// AMX-TILE and the OS's tile state (XCR0's XTILECFG and XTILEDATA), and this process allowed
// to use it: on Linux the first tile instruction faults until ARCH_REQ_XCOMP_PERM asks for
// XFEATURE_XTILEDATA (asked once).
bool tiles_permitted() {
  static const bool permitted = [] {
    if (!cpuid_bit(7, 0, kEdx, 24) || (xgetbv0() & 0x60000) != 0x60000) return false;
#if defined(__linux__)
    constexpr long kReqXcompPerm = 0x1023, kXtileData = 18;
    return syscall(SYS_arch_prctl, kReqXcompPerm, kXtileData) == 0;
#else
    return false;
#endif
  }();
  return permitted;
}

bool detect_amx_bf16() {
  return detect_avx512_bf16() && cpuid_bit(7, 0, kEdx, 22) && tiles_permitted();
}
bool detect_amx_int8() {
  return detect_avx512_vnni() && cpuid_bit(7, 0, kEdx, 25) && tiles_permitted();
}
#else
Isa detect_best() { return Isa::generic; }
bool detect_avx512_bf16() { return false; }
bool detect_avx512_vnni() { return false; }
bool detect_avx_vnni() { return false; }
bool detect_amx_bf16() { return false; }
bool detect_amx_int8() { return false; }
#endif

// Detect's answer, asked on the first call only.
template <bool (*Detect)()>
bool once() {
  static const bool has = Detect();
  return has;
}

std::string supported_names() {
  std::string s;
  for (Isa isa : supported_isas()) {
    if (!s.empty()) s += ' ';
    s += isa_name(isa);
  }
  return s;
}

}  // namespace

namespace detail {
std::atomic<int> active_isa{-1};

Isa resolve_active_isa() {
  static std::mutex mu;
  const std::lock_guard<std::mutex> lock(mu);
  if (const int isa = active_isa.load(); isa >= 0) return static_cast<Isa>(isa);
  const char* env = std::getenv("TINYLM_ISA");
  const Isa isa = env && *env ? parse_supported_isa(env) : supported_isas().back();
  active_isa.store(static_cast<int>(isa));
  return isa;
}
}  // namespace detail

bool cpu_has_avx512_bf16() { return once<detect_avx512_bf16>(); }
bool cpu_has_avx512_vnni() { return once<detect_avx512_vnni>(); }
bool cpu_has_avx_vnni() { return once<detect_avx_vnni>(); }
bool cpu_has_amx_bf16() { return once<detect_amx_bf16>(); }
bool cpu_has_amx_int8() { return once<detect_amx_int8>(); }

std::string_view isa_name(Isa isa) { return name_of(kIsaNames, isa); }

const std::vector<Isa>& supported_isas() {
  static const std::vector<Isa> levels = [] {
    std::vector<Isa> out;
    const Isa best = detect_best();
    for (const EnumName<Isa>& level : kIsaNames) {
      if (level.value <= best) out.push_back(level.value);
    }
    return out;
  }();
  return levels;
}

Isa parse_supported_isa(std::string_view name) {
  const std::optional<Isa> isa = find_named(kIsaNames, name);
  if (!isa) fail("TINYLM_ISA=", name, ": unknown level (supported here: ", supported_names(), ")");
  for (Isa s : supported_isas()) {
    if (s == *isa) return *isa;
  }
  fail("TINYLM_ISA=", name, ": this CPU does not support it (supported: ", supported_names(), ")");
}

void set_active_isa(Isa isa) {
  parse_supported_isa(isa_name(isa));
  detail::active_isa.store(static_cast<int>(isa));
}

std::string isa_summary() {
  return cat(isa_name(active_isa()), " (supported: ", supported_names(), ")");
}

}  // namespace tinylm::kernels
