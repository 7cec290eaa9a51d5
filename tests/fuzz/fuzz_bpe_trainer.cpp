// libFuzzer target: arbitrary bytes as the training text of the BPE trainer (what
// `tinylm train --arch evermind` learns its tokenizer from). The first byte picks the
// vocabulary size (257..512). Rejection must be a tinylm::Error. A trained tokenizer has the
// size asked for or less, its tokens are the concatenations its merges say, it loads through
// the tokenizer.json loader, and it encodes the text and decodes it back.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_scratch.h"
#include "tinylm/core/error.h"
#include "tinylm/tokenizers/bpe.h"
#include "tinylm/tokenizers/bpe_trainer.h"

using tinylm::fuzz::require;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0 || size > 4096) return 0;  // training is superlinear; keep executions fast
  tinylm::BpeTrainConfig config;
  config.vocab_size = 257 + data[0];
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  tinylm::BpeTrainResult r;
  try {
    r = tinylm::train_bpe(text, config);
  } catch (const tinylm::Error&) {
    return 0;
  }
  require(r.vocab_size() <= config.vocab_size);
  require(r.token_bytes.size() == 256 + r.merges.size() + r.special_tokens.size());
  for (size_t m = 0; m < r.merges.size(); ++m) {
    const auto [a, b] = r.merges[m];
    require(a >= 0 && b >= 0 && a < static_cast<int>(256 + m) && b < static_cast<int>(256 + m));
    require(r.token_bytes[256 + m] == r.token_bytes[a] + r.token_bytes[b]);
  }
  if (r.merges.empty()) return 0;  // the tokenizer.json loader needs at least one merge
  const tinylm::BpeTokenizer tok = r.tokenizer();
  require(tok.vocab_size() == r.vocab_size());
  const std::vector<int> ids = tok.encode(text);
  for (const int id : ids) require(id >= 0 && id < tok.vocab_size());
  require(tok.decode(ids) == tinylm::sanitize_utf8(text));
  return 0;
}
