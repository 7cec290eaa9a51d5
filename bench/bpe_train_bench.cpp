// Byte-level BPE training speed: the first 1 MiB of data/tinyshakespeare.txt to a 4,096-token
// vocabulary (with <|endoftext|>), single thread. Prints the median of --reps runs (after one
// warm-up) in seconds and MB/s, and the word-counting part of it separately.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "bench_util.h"
#include "tinylm/io/text_file.h"
#include "tinylm/tokenizers/bpe_trainer.h"

using namespace tinylm;

int main(int argc, char** argv) {
  std::string data = "data/tinyshakespeare.txt";
  int reps = 5, vocab = 4096;
  size_t bytes = size_t{1} << 20;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--data") && i + 1 < argc)
      data = argv[++i];
    else if (!std::strcmp(argv[i], "--reps") && i + 1 < argc)
      reps = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--vocab") && i + 1 < argc)
      vocab = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--bytes") && i + 1 < argc)
      bytes = std::strtoull(argv[++i], nullptr, 10);
    else {
      std::fprintf(stderr, "usage: %s [--data FILE] [--reps N] [--vocab N] [--bytes N]\n", argv[0]);
      return 2;
    }
  }
  try {
    std::string text = io::read_file(data);
    if (text.size() > bytes) text.resize(bytes);  // may cut a character: the trainer repairs it
    BpeTrainConfig config;
    config.vocab_size = vocab;
    BpeTrainResult result;
    const bench::Stats count = bench::time_it(1, reps, [&] {
      const auto words = count_bpe_words(text, config.special_tokens);
      if (words.empty()) std::printf("no words\n");
    });
    const bench::Stats total = bench::time_it(1, reps, [&] { result = train_bpe(text, config); });
    const double mb = static_cast<double>(text.size()) / 1e6;
    std::printf("bpe_train: %s, %zu bytes -> vocab %d (%zu merges)\n", data.c_str(), text.size(),
                result.vocab_size(), result.merges.size());
    std::printf("  total  median %.3f s (min %.3f s), %.2f MB/s  [%d reps]\n",
                total.median_ms / 1e3, total.min_ms / 1e3, mb / (total.median_ms / 1e3), reps);
    std::printf("  words  median %.3f s (pre-tokenize + count)\n", count.median_ms / 1e3);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bpe_train_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
