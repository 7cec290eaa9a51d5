// GPT-2 inference speed on a 124M-shaped model with random weights (what `tinylm init
// --preset 124M` writes): batch 1, a 16-token prompt, 64 new tokens, for f32, bf16 and f16.
// Prints prefill and decode tokens/s, the memory-bandwidth limit of decode (weight bytes per
// token / measured read bandwidth) and the fraction of it reached.
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "bench_util.h"
#include "tinylm/core/parallel.h"
#include "tinylm/generate/gpt2_generate.h"
#include "tinylm/models/gpt2/model.h"

using namespace tinylm;

namespace {

// Read bandwidth: sum a buffer much larger than the caches, all threads.
double read_bandwidth_gbs() {
  const size_t n = size_t{1} << 27;  // 512 MiB of floats
  std::vector<float> buf(n, 1.0f);
  double sink = 0;
  using f32x16 = float __attribute__((vector_size(64)));
  const bench::Stats s = bench::time_it(1, 5, [&] {
    const size_t nv = n / 16;
    float total = 0;
#pragma omp parallel reduction(+ : total)
    {
      f32x16 acc[4] = {};
#pragma omp for schedule(static)
      for (size_t i = 0; i < nv; i += 4) {
        for (int k = 0; k < 4; ++k) {
          f32x16 v;
          std::memcpy(&v, buf.data() + (i + k) * 16, sizeof v);
          acc[k] += v;
        }
      }
      for (int k = 0; k < 4; ++k) {
        for (int j = 0; j < 16; ++j) total += acc[k][j];
      }
    }
    sink += total;
  });
  if (sink < 0) std::printf("%g", sink);
  return static_cast<double>(n * sizeof(float)) / (s.median_ms * 1e6);
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 0, new_tokens = 64, reps = 5;
  std::string preset = "124M";
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--threads") && i + 1 < argc) threads = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--tokens") && i + 1 < argc) new_tokens = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--reps") && i + 1 < argc) reps = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--preset") && i + 1 < argc) preset = argv[++i];
    else {
      std::fprintf(stderr, "usage: %s [--threads N] [--tokens N] [--reps N] [--preset 124M|small-test]\n", argv[0]);
      return 2;
    }
  }
  set_num_threads(threads);
  const gpt2::Config c = gpt2::preset(preset);
  std::vector<float> params(gpt2::param_layout(c).size());
  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0.0f, 0.02f);
  for (float& p : params) p = normal(rng);
  const double bw = read_bandwidth_gbs();
  std::printf("GPT-2 %s, %d threads, read bandwidth %.1f GB/s\n", preset.c_str(), num_threads(), bw);
  std::printf("%-6s %12s %14s %14s %12s %10s\n", "dtype", "weights MB", "prefill tok/s", "decode tok/s",
              "limit tok/s", "of limit");
  const std::vector<int> prompt = {464, 2068, 7586, 21831, 18045, 625, 262, 16931, 3290, 13, 383, 2068, 7586, 21831, 18045, 625};
  for (DType dt : {DType::f32, DType::bf16, DType::f16}) {
    gpt2::Model m(c, params, dt);
    generate::GenerateOptions opt;
    opt.max_tokens = new_tokens;
    double prefill = 0, decode = 0;
    std::vector<double> pre, dec;
    for (int r = 0; r < reps + 1; ++r) {
      const generate::GenerateResult res = generate::generate(m, prompt, opt);
      if (r == 0) continue;  // warm-up: first touch of the KV cache and scratch
      pre.push_back(res.prefill_ms);
      dec.push_back(res.decode_ms / static_cast<double>(res.ids.size() - 1));
    }
    std::sort(pre.begin(), pre.end());
    std::sort(dec.begin(), dec.end());
    prefill = pre[pre.size() / 2];
    decode = dec[dec.size() / 2];
    const double limit = bw * 1e9 / static_cast<double>(m.weight_bytes());
    std::printf("%-6s %12.1f %14.1f %14.1f %12.1f %9.0f%%\n", std::string(dtype_name(dt)).c_str(),
                m.weight_bytes() / 1e6, prompt.size() * 1000.0 / prefill, 1000.0 / decode, limit,
                100.0 * (1000.0 / decode) / limit);
  }
  return 0;
}
