// Uses two public headers of the installed library: the GPT-2 tokenizer (from the installed
// share/tinylm/gpt2) and a model preset. Prints "ok" when both give what they must.
#include <cstdio>
#include <vector>

#include "tinylm/models/gpt2/config.h"
#include "tinylm/tokenizers/bpe.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: tinylm_consumer GPT2_VOCAB_DIR\n");
    return 2;
  }
  const tinylm::BpeTokenizer tok = tinylm::BpeTokenizer::from_directory(argv[1]);
  const std::vector<int> ids = tok.encode("Hello world");
  const tinylm::gpt2::Config small = tinylm::gpt2::preset("124M");
  if (ids != std::vector<int>{15496, 995} || tok.decode(ids) != "Hello world" ||
      small.n_layer != 12) {
    std::fprintf(stderr, "tinylm_consumer: unexpected results\n");
    return 1;
  }
  std::printf("ok\n");
  return 0;
}
