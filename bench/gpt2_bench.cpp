// GPT-2 inference speed on a 124M-shaped model with random weights saved as a Hugging Face
// directory (what `tinylm init --preset 124M` writes): batch 1, a 16-token prompt, 64 new
// tokens, for f32, bf16, f16, q8_0 and q4_0 (quantized at load; --dtypes picks some, and
// q8_0/q8_0 or q4_0/q8_0 names 8-bit activations, bf16/bf16 bf16 ones: Model::set_activations).
// Each dtype runs in a fresh process (this program re-executed with --child) so that load time, the
// first forward (which pays the page faults on freshly mapped or allocated memory) and peak memory
// are its own. Prints load ms, first-forward ms, prefill and decode tokens/s (medians after a
// warm-up), the memory-bandwidth limit of decode (measured read bandwidth / weight bytes per token)
// and the fraction of it reached, and peak resident memory against weights + KV cache.
//
// The read bandwidth of these shared virtual machines swings by 2x within seconds (other
// tenants), so each timed generation is paired with a bandwidth probe run right before it,
// and the fraction of the limit reached is the median over those pairs. The probe reads
// random values (constant pages could be deduplicated or compressed by the host and read
// faster than weights) from memory allocated like the weights (64-byte aligned, huge pages),
// all threads, in passes timed together over tens of milliseconds (one 5 ms pass was
// sometimes caught by a stall of one vCPU), with the better of two read patterns (see
// probe_gbs).
#if defined(__x86_64__)
#include <immintrin.h>
#endif
#include <omp.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "bench_util.h"
#include "tinylm/checkpoints/gpt2_checkpoint.h"
#include "tinylm/core/aligned_vector.h"
#include "tinylm/core/parallel.h"
#include "tinylm/core/timer.h"
#include "tinylm/generate/generate.h"
#include "tinylm/models/gpt2/model.h"

extern char** environ;

using namespace tinylm;

namespace {

// Sum of `Streams` interleaved streams of seg floats each from base (one vector of V from
// each in turn), like the decode kernels' 16-row passes over row-major weights. Inlined into
// the target functions below, so it reads with the instruction set of the active level.
template <int Streams, class V>
__attribute__((always_inline)) inline float sum_streams(const float* base, size_t seg) {
  constexpr size_t kLanes = sizeof(V) / sizeof(float);
  V acc[Streams] = {};
  for (size_t i = 0; i < seg; i += kLanes) {
    for (int k = 0; k < Streams; ++k) {
      V v;
      std::memcpy(&v, base + k * seg + i, sizeof v);
      acc[k] += v;
    }
  }
  float total = 0;
  for (int k = 0; k < Streams; ++k) {
    for (size_t j = 0; j < kLanes; ++j) total += acc[k][j];
  }
  return total;
}
#if defined(__x86_64__)
template <int Streams>
__attribute__((target("avx512f"))) float sum_streams_avx512(const float* base, size_t seg) {
  return sum_streams<Streams, __m512>(base, seg);
}
template <int Streams>
__attribute__((target("avx2"))) float sum_streams_avx2(const float* base, size_t seg) {
  return sum_streams<Streams, __m256>(base, seg);
}
#endif
template <int Streams>
float sum_streams_generic(const float* base, size_t seg) {
  using V = float __attribute__((vector_size(16)));
  return sum_streams<Streams, V>(base, seg);
}

// Read bandwidth in GB/s: `passes` passes over `buf` (much larger than the caches), all
// threads, each summing its contiguous part as `Streams` interleaved streams with the widest
// vectors of the active kernel level (TINYLM_ISA), which are what decode reads with.
template <int Streams>
double read_bandwidth_gbs(std::span<const float> buf, int passes) {
  float (*sum)(const float*, size_t) = sum_streams_generic<Streams>;
#if defined(__x86_64__)
  if (kernels::active_isa() == kernels::Isa::avx512) sum = sum_streams_avx512<Streams>;
  if (kernels::active_isa() == kernels::Isa::avx2) sum = sum_streams_avx2<Streams>;
#endif
  float total = 0;
  Timer t;
  for (int pass = 0; pass < passes; ++pass) {
#pragma omp parallel reduction(+ : total)
    {
      const size_t th = static_cast<size_t>(omp_get_thread_num()),
                   nth = static_cast<size_t>(omp_get_num_threads());
      const size_t lo = buf.size() * th / nth, hi = buf.size() * (th + 1) / nth;
      const size_t seg = (hi - lo) / Streams / 16 * 16;  // floats per stream, whole vectors
      total += sum(buf.data() + lo, seg);
    }
  }
  const double ms = t.elapsed_ms();
  if (total == 0.5f) std::printf(" ");  // keeps the sum live
  return static_cast<double>(passes) * static_cast<double>(buf.size() / 16 * 16 * sizeof(float)) /
         (ms * 1e6);
}

// The probe before each generation: the better of one stream and sixteen per thread (on these
// machines one stream reads faster while memory is quick and sixteen while it is slow), four
// passes each (1 GiB, tens of milliseconds).
double probe_gbs(std::span<const float> buf) {
  return std::max(read_bandwidth_gbs<1>(buf, 4), read_bandwidth_gbs<16>(buf, 4));
}

const std::vector<int> kPrompt = {464,  2068, 7586, 21831, 18045, 625,   262,   16931,
                                  3290, 13,   383,  2068,  7586,  21831, 18045, 625};

// A --dtypes entry: the weights' type, and the activations' after a '/' (default f32).
std::pair<DType, DType> parse_spec(const std::string& spec) {
  const size_t slash = spec.find('/');
  if (slash == std::string::npos) return {parse_dtype(spec), DType::f32};
  return {parse_dtype(spec.substr(0, slash)), parse_dtype(spec.substr(slash + 1))};
}

// One dtype, in this (fresh) process: load, first forward, memory, then timed generations
// each right after a bandwidth probe.
int run_child(const std::string& dir, const std::string& spec, int new_tokens, int reps) {
  const double rss0 = bench::proc_status_bytes("VmRSS");
  const auto [dt, activations] = parse_spec(spec);
  Timer load_timer;
  gpt2::Model m = checkpoints::load_gpt2_model(dir, "", dt);
  m.set_activations(activations);
  const double load_ms = load_timer.elapsed_ms();
  generate::GenerateOptions opt;
  opt.max_tokens = new_tokens;
  const auto backend = generate::gpt2_backend(m);
  Timer first_timer;
  generate::generate(*backend, kPrompt, opt);  // first touch of weights, KV cache and scratch
  const double first_ms = first_timer.elapsed_ms();
  const double peak = bench::proc_status_bytes("VmHWM") - rss0;  // before the probe's buffer

  AlignedVector<float> probe(size_t{64} << 20);  // 256 MiB of random values
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  for (float& v : probe) v = uniform(rng);
  read_bandwidth_gbs<1>(probe, 1);  // first touch
  const double weight_gb = static_cast<double>(m.weight_bytes()) / 1e9;
  std::vector<double> pre, dec, bws, reached;
  for (int r = 0; r < reps; ++r) {
    bws.push_back(probe_gbs(probe));
    const generate::GenerateResult res = generate::generate(*backend, kPrompt, opt);
    pre.push_back(res.prefill_ms);
    dec.push_back(res.decode_ms / static_cast<double>(res.ids.size() - 1));
    reached.push_back((1000.0 / dec.back()) / (bws.back() / weight_gb));  // this pair's fraction
  }
  const auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  const double prefill = median(pre), decode = median(dec), bw = median(bws);
  const gpt2::Config& c = m.config();
  const double cache_bytes = is_quantized(dt) ? 4.0 : static_cast<double>(dtype_size(dt));
  const double kv =
      2.0 * c.n_layer * static_cast<double>(kPrompt.size() + new_tokens) * c.n_embd * cache_bytes;
  std::printf("%-6s %-9s %9.1f %8.1f %9.1f %9.1f %8.1f %7.1f %7.1f %6.0f%% %9.1f %9.1f %6.2f\n",
              std::string(kernels::isa_name(kernels::active_isa())).c_str(), spec.c_str(),
              m.weight_bytes() / 1e6, load_ms, first_ms, kPrompt.size() * 1000.0 / prefill,
              1000.0 / decode, bw, bw / weight_gb, 100.0 * median(reached),
              (m.weight_bytes() + kv) / 1e6, peak / 1e6,
              peak / (static_cast<double>(m.weight_bytes()) + kv));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 0, new_tokens = 64, reps = 5;
  std::string preset = "124M", child, model_dir, dtypes = "f32,bf16,f16,q8_0,q4_0";
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--threads") && i + 1 < argc)
      threads = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--tokens") && i + 1 < argc)
      new_tokens = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--reps") && i + 1 < argc)
      reps = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--preset") && i + 1 < argc)
      preset = argv[++i];
    else if (!std::strcmp(argv[i], "--dtypes") && i + 1 < argc)
      dtypes = argv[++i];
    else if (!std::strcmp(argv[i], "--child") && i + 2 < argc) {
      child = argv[++i];
      model_dir = argv[++i];
    } else {
      std::fprintf(stderr,
                   "usage: %s [--threads N] [--tokens N] [--reps N] [--preset 124M|small-test] "
                   "[--dtypes f32,bf16,f16,q8_0,q4_0,q8_0/q8_0,q4_0/q8_0,bf16/bf16]\n",
                   argv[0]);
      return 2;
    }
  }
  set_num_threads(threads);
  if (!child.empty()) return run_child(model_dir, child, new_tokens, reps);

  const gpt2::Config c = gpt2::preset(preset);
  std::vector<float> params(gpt2::param_layout(c).size());
  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0.0f, 0.02f);
  for (float& p : params) p = normal(rng);
  const std::string dir =
      (std::filesystem::temp_directory_path() / ("tinylm_bench_gpt2_" + std::to_string(getpid())))
          .string();
  checkpoints::save_gpt2(dir, c, params);
  params = {};
  std::printf(
      "%s\nGPT-2 %s (random weights, f32 safetensors), %d threads, %zu-token prompt, %d new "
      "tokens, "
      "medians of %d\n",
      bench::level_line().c_str(), preset.c_str(), num_threads(), kPrompt.size(), new_tokens, reps);
  std::printf("%-6s %-9s %9s %8s %9s %9s %8s %7s %7s %7s %9s %9s %6s\n", "level", "dtype",
              "weight MB", "load ms", "1st fwd ms", "prefill/s", "decode/s", "GB/s", "limit/s",
              "reached", "w+kv MB", "peak MB", "ratio");
  std::fflush(stdout);
  int rc = 0;
  std::vector<std::string> list;
  for (size_t a = 0; a <= dtypes.size();) {
    const size_t b = std::min(dtypes.find(',', a), dtypes.size());
    list.push_back(dtypes.substr(a, b - a));
    (void)parse_spec(list.back());  // a bad name fails here, not in every child
    a = b + 1;
  }
  for (std::string& dt : list) {
    const std::string t = std::to_string(threads), n = std::to_string(new_tokens),
                      rp = std::to_string(reps);
    std::vector<std::string> args = {argv[0], "--child",  dt, dir,      "--threads",
                                     t,       "--tokens", n,  "--reps", rp};
    std::vector<char*> cargs;
    for (auto& a : args) cargs.push_back(a.data());
    cargs.push_back(nullptr);
    pid_t pid = 0;
    if (posix_spawn(&pid, "/proc/self/exe", nullptr, nullptr, cargs.data(), environ) != 0) {
      std::fprintf(stderr, "bench_gpt2: cannot start a child process\n");
      rc = 1;
      break;
    }
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) rc = 1;
  }
  std::filesystem::remove_all(dir);
  std::printf(
      "load ms: mapping + validation (f32 is used in place; bf16/f16 convert once). 1st fwd: the\n"
      "first generation, paying the page faults. GB/s: read bandwidth, median of the probes run\n"
      "right before each generation (best of 1 and 16 streams per thread); limit/s = GB/s / weight "
      "bytes per token; reached: median\n"
      "over generations of decode tok/s / the limit from its own probe. ratio: peak resident\n"
      "memory above the bare process / (weights + KV cache).\n");
  return rc;
}
