// GPT-2 byte-level BPE throughput on the real GPT-2 vocabulary (data/gpt2): MB/s encoding
// English text (data/tinyshakespeare.txt, about 1 MB) with a cold and a warm merge cache,
// decode MB/s, and the time to encode runs of one repeated character of growing length (1 MB
// at the end) to show that encoding stays linear in the input.
#include <cstdio>
#include <cstring>
#include <string>

#include "bench_util.h"
#include "tinylm/io/text_file.h"
#include "tinylm/tokenizers/bpe.h"

using namespace tinylm;

int main(int argc, char** argv) {
  std::string root = TINYLM_SOURCE_DIR;
  int reps = 5;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--reps") && i + 1 < argc)
      reps = std::atoi(argv[++i]);
    else {
      std::fprintf(stderr, "usage: %s [--reps N]\n", argv[0]);
      return 2;
    }
  }
  const std::string text = io::read_file(root + "/data/tinyshakespeare.txt");
  const double mb = static_cast<double>(text.size()) / 1e6;
  size_t n_ids = 0;
  double cold_ms = 0;
  {
    // A fresh tokenizer per run: its merge cache starts empty.
    std::vector<double> ms;
    for (int r = 0; r < reps; ++r) {
      const BpeTokenizer tok = BpeTokenizer::from_directory(root + "/data/gpt2");
      Timer t;
      n_ids = tok.encode(text).size();
      ms.push_back(t.elapsed_ms());
    }
    std::sort(ms.begin(), ms.end());
    cold_ms = ms[ms.size() / 2];
  }
  const BpeTokenizer tok = BpeTokenizer::from_directory(root + "/data/gpt2");
  std::vector<int> ids;
  const bench::Stats warm = bench::time_it(1, reps, [&] { ids = tok.encode(text); });
  std::string back;
  const bench::Stats dec = bench::time_it(1, reps, [&] { back = tok.decode(ids); });
  std::printf(
      "GPT-2 BPE on tinyshakespeare.txt (%.2f MB, %zu tokens, %.2f bytes/token), medians of %d\n",
      mb, n_ids, static_cast<double>(text.size()) / static_cast<double>(n_ids), reps);
  std::printf("  encode, cold cache  %8.1f ms  %7.1f MB/s\n", cold_ms, mb / (cold_ms / 1e3));
  std::printf("  encode, warm cache  %8.1f ms  %7.1f MB/s\n", warm.median_ms,
              mb / (warm.median_ms / 1e3));
  std::printf("  decode              %8.1f ms  %7.1f MB/s  (round trip %s)\n", dec.median_ms,
              mb / (dec.median_ms / 1e3), back == text ? "exact" : "DIFFERS");
  std::printf("runs of one character (linear time means ms/MB stays flat):\n");
  for (const char* ch : {"a", " ", "\xe4\xb8\x80"}) {  // a letter, a space, a CJK character
    for (size_t bytes : {size_t{1} << 16, size_t{1} << 18, size_t{1} << 20, size_t{1} << 21}) {
      std::string run;
      while (run.size() < bytes) run += ch;
      size_t n = 0;
      const bench::Stats s = bench::time_it(0, 3, [&] { n = tok.encode(run).size(); });
      std::printf("  %-6s x %7zu bytes: %8.2f ms  %7.1f ms/MB  %7zu tokens\n",
                  ch[0] == ' '   ? "space"
                  : ch[0] == 'a' ? "'a'"
                                 : "U+4E00",
                  run.size(), s.median_ms, s.median_ms / (static_cast<double>(run.size()) / 1e6),
                  n);
    }
  }
  return 0;
}
