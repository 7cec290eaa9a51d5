// Kernel micro-benchmarks (Google Benchmark) at microgpt's shapes (T positions of width C), and
// GPT-2 124M's weight products by weight type and row count (BM_Gpt2Product; the bf16 head:
// BM_Gpt2Head): decode (1 row), a server batch (8; 32 with bf16 activations) and a prompt (16,
// 64), the weights streamed from memory. The context line "kernels" names the level.
#include <benchmark/benchmark.h>
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

#include "tinylm/core/dtype.h"
#include "tinylm/core/parallel.h"
#include "tinylm/core/py_random.h"
#include "tinylm/kernels/activation/gelu.h"
#include "tinylm/kernels/activation/softmax.h"
#include "tinylm/kernels/attention/causal.h"
#include "tinylm/kernels/attention/exact.h"
#include "tinylm/kernels/cpu/isa.h"
#include "tinylm/kernels/matmul/bf16_dot.h"
#include "tinylm/kernels/matmul/exact.h"
#include "tinylm/kernels/matmul/exact_reference.h"
#include "tinylm/kernels/matmul/gemm.h"
#include "tinylm/kernels/matmul/stream.h"
#include "tinylm/kernels/norm/rmsnorm.h"
#include "tinylm/kernels/optim/adam.h"
#include "tinylm/kernels/quant/blocks.h"
#include "tinylm/kernels/quant/int_matmul.h"
#include "tinylm/kernels/quant/matmul.h"
#include "tinylm/optim/adam.h"

namespace k = tinylm::kernels;

namespace {

std::vector<double> filled(size_t n, double scale = 0.1) {
  std::vector<double> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = scale * std::sin(0.37 * static_cast<double>(i) + 0.11);
  return v;
}

void BM_LinearForwardPacked(benchmark::State& state) {
  const int64_t T = 8, nin = state.range(0), nout = state.range(1);
  const auto x = filled(T * nin), w = filled(nout * nin);
  std::vector<double> wt(nin * k::padded_width(nout)), y(T * nout);
  k::transpose_padded(wt.data(), w.data(), nout, nin);
  for (auto _ : state) {
    k::linear_forward_packed(y.data(), x.data(), wt.data(), T, nin, nout);
    benchmark::DoNotOptimize(y.data());
  }
  state.SetItemsProcessed(state.iterations() * T * nin * nout);
}
BENCHMARK(BM_LinearForwardPacked)->Args({16, 16})->Args({16, 64})->Args({64, 16})->Args({16, 27});

void BM_LinearForwardRowMajor(benchmark::State& state) {
  const int64_t T = 8, nin = state.range(0), nout = state.range(1);
  const auto x = filled(T * nin), w = filled(nout * nin);
  std::vector<double> y(T * nout);
  for (auto _ : state) {
    k::reference::linear_forward(y.data(), x.data(), w.data(), T, nin, nout);
    benchmark::DoNotOptimize(y.data());
  }
  state.SetItemsProcessed(state.iterations() * T * nin * nout);
}
BENCHMARK(BM_LinearForwardRowMajor)->Args({16, 16})->Args({16, 64})->Args({64, 16});

void BM_LinearBackward(benchmark::State& state) {
  const int64_t T = 8, nin = state.range(0), nout = state.range(1);
  const auto x = filled(T * nin), w = filled(nout * nin), dy = filled(T * nout);
  std::vector<double> dx(T * nin), dw(nout * nin);
  for (auto _ : state) {
    k::linear_backward(dx.data(), dw.data(), dy.data(), x.data(), w.data(), T, nin, nout);
    benchmark::DoNotOptimize(dw.data());
  }
  state.SetItemsProcessed(state.iterations() * T * nin * nout);
}
BENCHMARK(BM_LinearBackward)->Args({16, 16})->Args({16, 64})->Args({64, 16});

void BM_RmsnormForwardBackward(benchmark::State& state) {
  const int64_t T = 8, C = 16;
  const auto x = filled(T * C), dy = filled(T * C);
  std::vector<double> y(T * C), s(T), dx(T * C);
  for (auto _ : state) {
    k::rmsnorm_forward(y.data(), s.data(), x.data(), T, C, 1e-5);
    k::rmsnorm_backward(dx.data(), dy.data(), x.data(), s.data(), T, C, 1e-5);
    benchmark::DoNotOptimize(dx.data());
  }
}
BENCHMARK(BM_RmsnormForwardBackward);

void BM_AttentionForwardBackward(benchmark::State& state) {
  const int64_t T = state.range(0), C = 16, H = 4;
  const auto q = filled(T * C), kk = filled(T * C, 0.2), v = filled(T * C, 0.3),
             dout = filled(T * C);
  std::vector<double> out(T * C), att(H * T * T), dq(T * C), dk(T * C), dv(T * C), scratch(T);
  for (auto _ : state) {
    k::attention_forward(out.data(), att.data(), q.data(), kk.data(), v.data(), 0, T, C, H, T, 0.5);
    k::attention_backward(dq.data(), dk.data(), dv.data(), scratch.data(), dout.data(), att.data(),
                          q.data(), kk.data(), v.data(), T, C, H, T, 0.5);
    benchmark::DoNotOptimize(dq.data());
  }
}
BENCHMARK(BM_AttentionForwardBackward)->Arg(8)->Arg(16);

// GPT-2's training attention (float): B sequences of T positions, n_head heads of D channels,
// attention-weight dropout at rate/100. Items: the multiply-adds of the T x T products (forward 2
// per causal pair and channel, backward 4).
void CausalAttention(benchmark::State& state, bool backward) {
  const int64_t B = state.range(0), T = state.range(1), H = state.range(2), D = state.range(4),
                C = D * H;
  const float rate = static_cast<float>(state.range(3)) / 100.0f;
  std::vector<float> qkv(B * T * 3 * C), dout(B * T * C), out(B * T * C), att(B * H * T * T),
      dqkv(B * T * 3 * C), scratch(k::causal_attention_scratch_size(B, T, C, H));
  for (size_t i = 0; i < qkv.size(); ++i) qkv[i] = static_cast<float>(std::sin(0.37 * i + 0.11));
  for (size_t i = 0; i < dout.size(); ++i) dout[i] = static_cast<float>(std::cos(0.29 * i));
  const k::DropoutSite where{.seed = 1, .step = 1, .site = 3};
  k::causal_attention_forward(out.data(), att.data(), qkv.data(), scratch.data(), B, T, C, H, rate,
                              where);
  for (auto _ : state) {
    if (backward)
      k::causal_attention_backward(dqkv.data(), dout.data(), att.data(), qkv.data(), scratch.data(),
                                   B, T, C, H, rate);
    else
      k::causal_attention_forward(out.data(), att.data(), qkv.data(), scratch.data(), B, T, C, H,
                                  rate, where);
    benchmark::DoNotOptimize(dqkv.data());
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(state.iterations() * B * H * T * (T + 1) / 2 * D * (backward ? 4 : 2));
}
void BM_CausalAttentionForward(benchmark::State& state) { CausalAttention(state, false); }
void BM_CausalAttentionBackward(benchmark::State& state) { CausalAttention(state, true); }
// Args: B, T, heads, dropout %, head size. nanoGPT's CPU recipe (12 x 64 positions, 4 heads of
// 32); its baby GPT (6 heads, 256 positions), with and without its dropout; GPT-2 124M's heads.
BENCHMARK(BM_CausalAttentionForward)
    ->Args({12, 64, 4, 0, 32})
    ->Args({4, 256, 6, 0, 64})
    ->Args({4, 256, 6, 20, 64})
    ->Args({1, 1024, 12, 0, 64})
    ->UseRealTime();
BENCHMARK(BM_CausalAttentionBackward)
    ->Args({12, 64, 4, 0, 32})
    ->Args({4, 256, 6, 0, 64})
    ->Args({4, 256, 6, 20, 64})
    ->Args({1, 1024, 12, 0, 64})
    ->UseRealTime();

void BM_AdamStepExact(benchmark::State& state) {
  const size_t n = 4192;
  auto p = filled(n), g0 = filled(n, 1e-3);
  std::vector<double> g(n);
  tinylm::optim::Adam<double> adam(n, {0.85, 0.99, 1e-8, 0.0});
  int64_t t = 0;
  for (auto _ : state) {
    std::copy(g0.begin(), g0.end(), g.begin());
    adam.step(p, g, 0.01, ++t);
    benchmark::DoNotOptimize(p.data());
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(n));
}
BENCHMARK(BM_AdamStepExact);

// The f32 AdamW update over n parameters (configs/shakespeare_char.toml's model has 0.8M, in
// cache; GPT-2 124M's 124M stream from memory), on the threads of the pool. Each iteration
// first copies the gradients back (the update zeroes them), and the time includes the copy.
void BM_AdamStepF32(benchmark::State& state) {
  const int64_t n = state.range(0);
  std::vector<float> p(n), g0(n), g(n), m(n), v(n);
  for (int64_t i = 0; i < n; ++i) {
    p[i] = 0.02f * std::sin(0.37f * static_cast<float>(i));
    g0[i] = 1e-3f * std::sin(0.29f * static_cast<float>(i));
    m[i] = 1e-3f * std::cos(0.21f * static_cast<float>(i));
    v[i] = 1e-6f * (1.5f + std::sin(0.13f * static_cast<float>(i)));
  }
  int64_t t = 0;
  for (auto _ : state) {
    ++t;
    std::copy(g0.begin(), g0.end(), g.begin());  // adam_update zeroes the gradients
    const k::AdamStep s{1e-3, 0.9, 0.99, 1e-8, 1 - std::pow(0.9, t), 1 - std::pow(0.99, t), 1e-4};
    k::adam_update(p.data(), g.data(), m.data(), v.data(), n, s);
    benchmark::DoNotOptimize(p.data());
  }
  state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK(BM_AdamStepF32)->Arg(800 * 1024)->Arg(124 << 20)->UseRealTime();

// GELU forward and backward over one MLP activation of the nanoGPT recipe (12 x 64 tokens,
// 4 x 128 wide: 393,216 elements), in cache, on the threads of the pool.
void BM_GeluForward(benchmark::State& state) {
  const int64_t n = state.range(0);
  std::vector<float> x(n), y(n);
  for (int64_t i = 0; i < n; ++i) x[i] = 3.0f * std::sin(0.37f * static_cast<float>(i));
  for (auto _ : state) {
    k::gelu_forward(y.data(), x.data(), n);
    benchmark::DoNotOptimize(y.data());
  }
  state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK(BM_GeluForward)->Arg(393216)->Arg(25165824)->UseRealTime();

void BM_GeluBackward(benchmark::State& state) {
  const int64_t n = state.range(0);
  std::vector<float> x(n), dy(n), dx(n);
  for (int64_t i = 0; i < n; ++i) {
    x[i] = 3.0f * std::sin(0.37f * static_cast<float>(i));
    dy[i] = std::cos(0.11f * static_cast<float>(i));
  }
  for (auto _ : state) {
    k::gelu_backward(dx.data(), dy.data(), x.data(), n);
    benchmark::DoNotOptimize(dx.data());
  }
  state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK(BM_GeluBackward)->Arg(393216)->Arg(25165824)->UseRealTime();

void BM_PyRandomGauss(benchmark::State& state) {
  tinylm::PyRandom rng(42);
  for (auto _ : state) benchmark::DoNotOptimize(rng.gauss(0.0, 0.08));
}
BENCHMARK(BM_PyRandomGauss);

// GPT-2 124M's MLP up-projection (768 -> 3072, bias) over `rows` rows, weights as the model
// keeps them: bf16 in the tiles layout (bf16_dot: in the pairs layout, with bf16 activations,
// kernels/matmul/bf16_dot.h), or q8_0 / q4_0 blocks (ggml's layout; _int8: with 8-bit
// activations). Copies of the matrix (96 MB of them) are used in turn, so that the weights
// stream from memory as in the model rather than from a last-level cache (unless it is larger
// than that).
enum class Act { f32, int8, bf16 };
void BM_Gpt2Product(benchmark::State& state, tinylm::DType t, Act act = Act::f32) {
  if (act == Act::bf16 && !k::bf16_dot_available())
    return state.SkipWithError("bf16 activations need AVX512_BF16 at the avx512 level");
  const int64_t rows = state.range(0), nin = 768, nout = 3072;
  const int kCopies = static_cast<int>((size_t{96} << 20) / tinylm::storage_bytes(t, nin * nout));
  std::vector<float> x(rows * nin), y(rows * nout), b(nout, 0.01f), w(nin * nout);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(std::sin(0.37 * i));
  for (size_t i = 0; i < w.size(); ++i) w[i] = 0.02f * static_cast<float>(std::sin(0.11 * i));
  std::vector<std::vector<k::Bf16>> wb(kCopies);
  std::vector<std::vector<std::byte>> blocks(kCopies);
  for (int c = 0; c < kCopies; ++c) {
    if (t == tinylm::DType::bf16) {
      std::vector<k::Bf16> rowmajor(w.size());
      for (size_t i = 0; i < w.size(); ++i) rowmajor[i] = k::Bf16{tinylm::float_to_bf16(w[i])};
      wb[c].resize(w.size());
      k::pack_tiles(wb[c].data(), rowmajor.data(), nin, nout);
      if (act == Act::bf16) k::tiles_to_pairs(wb[c].data(), nin, nout);
    } else {
      blocks[c].resize(tinylm::storage_bytes(t, nin * nout));
      k::quantize(t, w.data(), blocks[c].data(), nin * nout);
    }
  }
  if (act == Act::int8) {  // (8-bit activations read the weights packed)
    for (auto& m : blocks) k::pack_int8(t, m.data(), m.data(), nin, nout);
  }
  int c = 0;
  for (auto _ : state) {
    if (act == Act::bf16)
      k::matmul_in_out_bf16(y.data(), x.data(), wb[c].data(), b.data(), rows, nin, nout);
    else if (t == tinylm::DType::bf16)
      k::matmul_in_out(y.data(), x.data(), wb[c].data(), b.data(), rows, nin, nout,
                       k::Layout::tiles);
    else if (act == Act::int8)
      k::quant_matmul_int8(t, y.data(), x.data(), blocks[c].data(), b.data(), rows, nin, nout);
    else
      k::quant_matmul(t, y.data(), x.data(), blocks[c].data(), b.data(), rows, nin, nout);
    benchmark::DoNotOptimize(y.data());
    c = (c + 1) % kCopies;
  }
  state.SetItemsProcessed(state.iterations() * rows * nin * nout);  // multiply-adds
}
BENCHMARK_CAPTURE(BM_Gpt2Product, bf16, tinylm::DType::bf16)
    ->Arg(1)
    ->Arg(8)
    ->Arg(16)
    ->Arg(64)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_Gpt2Product, bf16_dot, tinylm::DType::bf16, Act::bf16)
    ->Arg(1)
    ->Arg(8)
    ->Arg(16)
    ->Arg(32)
    ->Arg(64)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_Gpt2Product, q8_0, tinylm::DType::q8_0)
    ->Arg(1)
    ->Arg(8)
    ->Arg(16)
    ->Arg(64)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_Gpt2Product, q4_0, tinylm::DType::q4_0)
    ->Arg(1)
    ->Arg(8)
    ->Arg(16)
    ->Arg(64)
    ->UseRealTime();
// With 8-bit activations (kernels/quant/int_matmul.h).
BENCHMARK_CAPTURE(BM_Gpt2Product, q8_0_int8, tinylm::DType::q8_0, Act::int8)
    ->Arg(1)
    ->Arg(8)
    ->Arg(16)
    ->Arg(32)
    ->Arg(64)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_Gpt2Product, q4_0_int8, tinylm::DType::q4_0, Act::int8)
    ->Arg(1)
    ->Arg(8)
    ->Arg(16)
    ->Arg(32)
    ->Arg(64)
    ->UseRealTime();

// GPT-2 124M's tied output head (logits = x wte^T: 50257 outputs of 768 inputs, bf16) over
// `rows` rows: decode (1), a server's batch (8, 32) and more (64). Its 77 MB stream from memory
// (two copies used in turn, so a last-level cache cannot hold the one in use). bf16_dot: with
// bf16 activations.
void BM_Gpt2Head(benchmark::State& state, bool bf16_dot) {
  if (bf16_dot && !k::bf16_dot_available())
    return state.SkipWithError("bf16 activations need AVX512_BF16 at the avx512 level");
  const int64_t rows = state.range(0), nin = 768, nout = 50257;
  std::vector<float> x(rows * nin), y(rows * nout);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(std::sin(0.37 * i));
  std::vector<std::vector<k::Bf16>> w(2, std::vector<k::Bf16>(nin * nout));
  for (auto& m : w) {
    for (size_t i = 0; i < m.size(); ++i)
      m[i] = k::Bf16{tinylm::float_to_bf16(0.02f * static_cast<float>(std::sin(0.11 * i)))};
  }
  int c = 0;
  for (auto _ : state) {
    if (bf16_dot)
      k::matmul_out_in_bf16(y.data(), x.data(), w[c].data(), rows, nin, nout);
    else
      k::matmul_out_in(y.data(), x.data(), w[c].data(), rows, nin, nout);
    benchmark::DoNotOptimize(y.data());
    c ^= 1;
  }
  state.SetItemsProcessed(state.iterations() * rows * nin * nout);  // multiply-adds
}
BENCHMARK_CAPTURE(BM_Gpt2Head, f32, false)->Arg(1)->Arg(8)->Arg(32)->Arg(64)->UseRealTime();
BENCHMARK_CAPTURE(BM_Gpt2Head, bf16_dot, true)->Arg(1)->Arg(8)->Arg(32)->Arg(64)->UseRealTime();

// The f32 head over a perplexity window's rows (logits for every row: 77 GFLOP per 1,000 rows):
// the row-invariant product that inference uses, and oneDNN's gemm on the same operands for
// comparison (tolerance contract: not the same bits at every level, so not used for inference).
void BM_Gpt2HeadRows(benchmark::State& state, bool onednn) {
  const int64_t rows = state.range(0), nin = 768, nout = 50257;
  std::vector<float> x(rows * nin), y(rows * nout), w(nin * nout);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(std::sin(0.37 * i));
  for (size_t i = 0; i < w.size(); ++i) w[i] = 0.02f * static_cast<float>(std::sin(0.11 * i));
  for (auto _ : state) {
    if (onednn)
      k::gemm(k::Trans::No, k::Trans::Yes, rows, nout, nin, 1.0f, x.data(), nin, w.data(), nin,
              0.0f, y.data(), nout);
    else
      k::matmul_out_in(y.data(), x.data(), w.data(), rows, nin, nout);
    benchmark::DoNotOptimize(y.data());
  }
  state.SetItemsProcessed(state.iterations() * rows * nin * nout);  // multiply-adds
}
BENCHMARK_CAPTURE(BM_Gpt2HeadRows, stream, false)->Arg(256)->Arg(1024)->UseRealTime();
BENCHMARK_CAPTURE(BM_Gpt2HeadRows, onednn, true)->Arg(256)->Arg(1024)->UseRealTime();

// The ceiling of the int8 products' register tile on AVX512-VNNI (quant/int_tiles.h), one
// thread, everything in L1: `plain`, 8 independent chains of VPDPBUSD alone; `tile`, the 8-row
// tile's instructions for a Q8_0 block (each step's weights loaded and offset to unsigned, the
// 8 rows' activations broadcast, a start value per row) and the per-block scaling the product's
// contract fixes (int32 to float, the two scales' product, a fused multiply-add). The kernel's
// figures (BM_Gpt2Product/q8_0_int8) read against these. Items: multiply-adds.
#define TINYLM_VNNI_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,f16c")))
struct Int8Group {
  alignas(64) uint8_t blocks[24][544];  // a group's 24 packed blocks: 16 scales, 8 steps
  alignas(64) int8_t x[8][768];         // 8 rows' quantized activations
  float dx[8][24];
  int32_t sx[8][24];
};
std::unique_ptr<Int8Group> int8_group() {
  auto g = std::make_unique<Int8Group>();
  for (int i = 0; i < 24 * 544; ++i) g->blocks[i / 544][i % 544] = static_cast<uint8_t>(i * 7);
  for (int i = 0; i < 8 * 768; ++i) g->x[i / 768][i % 768] = static_cast<int8_t>(i * 5);
  for (int i = 0; i < 8 * 24; ++i) {
    g->dx[i / 24][i % 24] = 0.01f;
    g->sx[i / 24][i % 24] = i;
  }
  return g;
}
template <bool tile>
TINYLM_VNNI_TARGET float vnni_group(const Int8Group& g) {
  __m512 c[8];
  for (auto& v : c) v = _mm512_setzero_ps();
  for (int k = 0; k < 24; ++k) {
    const uint8_t* blk = g.blocks[k];
    __m512i acc[8];
    for (int r = 0; r < 8; ++r)
      acc[r] = tile ? _mm512_set1_epi32(-16 * g.sx[r][k]) : _mm512_setzero_si512();
#pragma GCC unroll 8
    for (int s = 0; s < 8; ++s) {
      __m512i w = _mm512_loadu_si512(blk + 32 + 64 * s);
      if constexpr (tile) w = _mm512_xor_si512(w, _mm512_set1_epi8(static_cast<char>(0x80)));
#pragma GCC unroll 8
      for (int r = 0; r < 8; ++r) {
        int32_t v;
        std::memcpy(&v, g.x[r] + k * 32 + 4 * s, 4);
        acc[r] = _mm512_dpbusd_epi32(acc[r], w, _mm512_set1_epi32(v));
      }
    }
    // (The masked conversions: GCC 12 warns that the unmasked ones' undefined sources may be used.)
    const __m512 dw =
        _mm512_maskz_cvtph_ps(0xffff, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk)));
#pragma GCC unroll 8
    for (int r = 0; r < 8; ++r) {
      c[r] = tile ? _mm512_fmadd_ps(_mm512_maskz_cvtepi32_ps(0xffff, acc[r]),
                                    _mm512_mul_ps(dw, _mm512_set1_ps(g.dx[r][k])), c[r])
                  : _mm512_castsi512_ps(_mm512_add_epi32(_mm512_castps_si512(c[r]), acc[r]));
    }
  }
  for (int r = 1; r < 8; ++r) c[0] = _mm512_add_ps(c[0], c[r]);
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, c[0]);
  return lanes[0];
}
template <bool tile>
void BM_VnniCeiling(benchmark::State& state) {
  if (!k::cpu_has_avx512_vnni()) return state.SkipWithError("this CPU lacks AVX512-VNNI");
  const auto g = int8_group();
  for (auto _ : state) benchmark::DoNotOptimize(vnni_group<tile>(*g));
  state.SetItemsProcessed(state.iterations() * 8 * 24 * 32 * 16);  // rows x inputs x outputs
}
BENCHMARK_TEMPLATE(BM_VnniCeiling, false)->Name("BM_VnniCeiling/plain");
BENCHMARK_TEMPLATE(BM_VnniCeiling, true)->Name("BM_VnniCeiling/tile");

// The same ceiling for the AVX2 level's tile (4 rows of 8 outputs, both halves of a packed
// block in turn): `tile`, its instructions (each row's activations taking the weights' signs,
// VPMADDUBSW on the weights' magnitudes, VPMADDWD and an add into int32, then the per-block
// scaling); `unsigned`, the same without the sign step, as if the activations were unsigned,
// which is what the sign costs. Items: multiply-adds.
#define TINYLM_AVX2_TARGET __attribute__((target("avx2,fma,f16c")))
template <bool sign>
TINYLM_AVX2_TARGET float avx2_int8_group(const Int8Group& g, int part) {
  __m256 c[4];
  for (auto& v : c) v = _mm256_setzero_ps();
  const __m256i ones = _mm256_set1_epi16(1);
  for (int k = 0; k < 24; ++k) {
    const uint8_t* blk = g.blocks[k];
    __m256i acc[4];
    for (auto& a : acc) a = _mm256_setzero_si256();
#pragma GCC unroll 8
    for (int s = 0; s < 8; ++s) {
      const __m256i w =
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 32 + 64 * s) + part);
      const __m256i magnitude = _mm256_sign_epi8(w, w);
#pragma GCC unroll 4
      for (int r = 0; r < 4; ++r) {
        int32_t v;
        std::memcpy(&v, g.x[r] + k * 32 + 4 * s, 4);
        __m256i x = _mm256_set1_epi32(v);
        if constexpr (sign) x = _mm256_sign_epi8(x, w);
        acc[r] =
            _mm256_add_epi32(acc[r], _mm256_madd_epi16(_mm256_maddubs_epi16(magnitude, x), ones));
      }
    }
    const __m256 dw =
        _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk) + part));
#pragma GCC unroll 4
    for (int r = 0; r < 4; ++r) {
      c[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(acc[r]),
                             _mm256_mul_ps(dw, _mm256_set1_ps(g.dx[r][k])), c[r]);
    }
  }
  for (int r = 1; r < 4; ++r) c[0] = _mm256_add_ps(c[0], c[r]);
  return _mm256_cvtss_f32(c[0]);
}
template <bool sign>
void BM_Avx2Int8Ceiling(benchmark::State& state) {
  const auto& isas = k::supported_isas();
  if (std::find(isas.begin(), isas.end(), k::Isa::avx2) == isas.end())
    return state.SkipWithError("this CPU lacks AVX2");
  const auto g = int8_group();
  for (auto _ : state) {
    benchmark::DoNotOptimize(avx2_int8_group<sign>(*g, 0));
    benchmark::DoNotOptimize(avx2_int8_group<sign>(*g, 1));
  }
  state.SetItemsProcessed(state.iterations() * 4 * 24 * 32 * 16);  // rows x inputs x outputs
}
BENCHMARK_TEMPLATE(BM_Avx2Int8Ceiling, true)->Name("BM_Avx2Int8Ceiling/tile");
BENCHMARK_TEMPLATE(BM_Avx2Int8Ceiling, false)->Name("BM_Avx2Int8Ceiling/unsigned");

// The same for the avx2 level's tile on AVX-VNNI (3 rows by both halves of a packed block, each
// row's activations broadcast once for both): each step's two weight vectors loaded and offset
// to unsigned, a VPDPBUSD a row and half, a start value per row, the per-block scaling.
#define TINYLM_AVXVNNI_TARGET __attribute__((target("avx2,fma,f16c,avxvnni")))
TINYLM_AVXVNNI_TARGET float avx_vnni_group(const Int8Group& g, int r0) {
  __m256 c[3][2];
  for (auto& row : c) row[0] = row[1] = _mm256_setzero_ps();
  const __m256i offset = _mm256_set1_epi8(static_cast<char>(0x80));
  for (int k = 0; k < 24; ++k) {
    const uint8_t* blk = g.blocks[k];
    __m256i acc[3][2];
    for (int r = 0; r < 3; ++r) acc[r][0] = acc[r][1] = _mm256_set1_epi32(-16 * g.sx[r0 + r][k]);
#pragma GCC unroll 8
    for (int s = 0; s < 8; ++s) {
      const auto* ws = reinterpret_cast<const __m256i*>(blk + 32 + 64 * s);
      const __m256i w0 = _mm256_xor_si256(_mm256_loadu_si256(ws), offset);
      const __m256i w1 = _mm256_xor_si256(_mm256_loadu_si256(ws + 1), offset);
#pragma GCC unroll 3
      for (int r = 0; r < 3; ++r) {
        int32_t v;
        std::memcpy(&v, g.x[r0 + r] + k * 32 + 4 * s, 4);
        const __m256i x = _mm256_set1_epi32(v);
        acc[r][0] = _mm256_dpbusd_avx_epi32(acc[r][0], w0, x);
        acc[r][1] = _mm256_dpbusd_avx_epi32(acc[r][1], w1, x);
      }
    }
    const auto* scales = reinterpret_cast<const __m128i*>(blk);
    const __m256 dw[2] = {_mm256_cvtph_ps(_mm_loadu_si128(scales)),
                          _mm256_cvtph_ps(_mm_loadu_si128(scales + 1))};
#pragma GCC unroll 3
    for (int r = 0; r < 3; ++r) {
      const __m256 dx = _mm256_set1_ps(g.dx[r0 + r][k]);
      for (int p = 0; p < 2; ++p) {
        c[r][p] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(acc[r][p]), _mm256_mul_ps(dw[p], dx), c[r][p]);
      }
    }
  }
  __m256 sum = _mm256_setzero_ps();
  for (const auto& row : c) sum = _mm256_add_ps(sum, _mm256_add_ps(row[0], row[1]));
  return _mm256_cvtss_f32(sum);
}
void BM_AvxVnniCeiling(benchmark::State& state) {
  if (!k::cpu_has_avx_vnni()) return state.SkipWithError("this CPU lacks AVX-VNNI");
  const auto g = int8_group();
  for (auto _ : state) {
    benchmark::DoNotOptimize(avx_vnni_group(*g, 0));
    benchmark::DoNotOptimize(avx_vnni_group(*g, 3));
  }
  state.SetItemsProcessed(state.iterations() * 6 * 24 * 32 * 16);  // rows x inputs x outputs
}
BENCHMARK(BM_AvxVnniCeiling)->Name("BM_AvxVnniCeiling/tile");

// The memory's read bandwidth on all threads: a 512 MB buffer summed in 1 MB chunks (integer
// adds, four chains a thread). Decode of one sequence reads every weight once a token, so its
// tokens/s is bounded by this over the weights' bytes. Items: bytes.
void BM_ReadBandwidth(benchmark::State& state) {
  constexpr int64_t kBytes = int64_t{512} << 20, kChunk = int64_t{1} << 20;
  std::vector<uint64_t> buffer(kBytes / 8, 1);
  std::vector<uint64_t> sums(kBytes / kChunk);
  for (auto _ : state) {
    tinylm::parallel_for(0, kBytes / kChunk, 1, [&](int64_t c) {
      const uint64_t* p = buffer.data() + c * (kChunk / 8);
      uint64_t s[4] = {};
      for (int64_t i = 0; i < kChunk / 8; i += 4) {
        for (int k = 0; k < 4; ++k) s[k] += p[i + k];
      }
      sums[c] = s[0] + s[1] + s[2] + s[3];
    });
    benchmark::DoNotOptimize(sums.data());
  }
  state.SetBytesProcessed(state.iterations() * kBytes);
}
BENCHMARK(BM_ReadBandwidth)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  benchmark::AddCustomContext("kernels", std::string(k::isa_name(k::active_isa())));
  benchmark::AddCustomContext("bf16 products", std::string(k::bf16_unit_name(k::bf16_dot_unit())));
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
}
