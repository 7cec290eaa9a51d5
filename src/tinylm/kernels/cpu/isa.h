#pragma once
// The instruction-set levels the kernels are compiled for, and the one in use.
//
// Every kernel source is compiled once per level (kernels/cpu/level.h). At first use the best
// level this CPU and its operating system support is chosen from CPUID and XGETBV; the
// environment variable TINYLM_ISA forces a lower one (for tests and benchmarks). Every level
// computes the same bits (docs/architecture.md), so the choice changes speed only.
#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tinylm::kernels {

enum class Isa : uint8_t {
  generic,  // portable C++ with compiler vector extensions; no intrinsics
  avx2,     // AVX2 + FMA + F16C
  avx512,   // AVX-512 F, BW, VL and DQ
};

std::string_view isa_name(Isa isa);

// The levels compiled into this build that this CPU and OS can run, lowest first (generic
// always).
const std::vector<Isa>& supported_isas();

// The level kernels run at: TINYLM_ISA when set (it must name a supported level), otherwise
// the best supported one. The first call reads the environment and throws tinylm::Error for
// an unknown or unsupported TINYLM_ISA; the CLI calls it before anything else.
Isa active_isa();

namespace detail {
extern std::atomic<int> active_isa;  // -1 until resolved
Isa resolve_active_isa();
}  // namespace detail

inline Isa active_isa() {
  const int isa = detail::active_isa.load(std::memory_order_relaxed);
  return isa >= 0 ? static_cast<Isa>(isa) : detail::resolve_active_isa();
}

// Whether the CPU (and OS) can run AVX512_BF16's instructions, beyond the avx512 level's set
// (kernels/matmul/bf16_dot.h).
bool cpu_has_avx512_bf16();

// Whether the CPU can run AVX512-VNNI's VPDPBUSD at the avx512 level (quant/int_matmul.h).
bool cpu_has_avx512_vnni();

// Whether the CPU can run AVX-VNNI's VPDPBUSD (the VEX form, 256 bits) at the avx2 level: Alder
// Lake and later cores, Sapphire Rapids and later Xeons (quant/int_matmul.h).
bool cpu_has_avx_vnni();

// Whether the CPU has AMX-TILE and AMX-BF16 besides, and the OS lets this process use the
// tiles (on Linux the first call asks for them, as the kernel requires before first use).
bool cpu_has_amx_bf16();

// Whether the CPU has AMX-TILE and AMX-INT8 besides AVX512-VNNI, and the OS lets this process
// use the tiles (asked for as above).
bool cpu_has_amx_int8();

// Switches every kernel to `isa` (tests and benchmarks); throws Error when it is not
// supported. Not meant to race with running kernels.
void set_active_isa(Isa isa);

// Parses a level name ("generic", "avx2", "avx512"); throws Error naming the supported levels
// for anything else or a level this CPU cannot run.
Isa parse_supported_isa(std::string_view name);

// "avx512 (supported: generic avx2 avx512)": the level in use and the ones available, for
// --version and benchmark headers.
std::string isa_summary();

}  // namespace tinylm::kernels
