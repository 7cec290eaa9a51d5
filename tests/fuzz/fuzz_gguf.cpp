// libFuzzer target: arbitrary bytes into GgufFile::from_bytes, then the GPT-2 reading of a file
// that parses (configuration, tensor checks, tokenizer, every tensor decoded). Rejection must be
// a tinylm::Error; anything else (another exception, a sanitizer report, a broken invariant)
// crashes so the fuzzer reports it.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <vector>

#include "tinylm/checkpoints/gguf_quant.h"
#include "tinylm/checkpoints/gpt2_gguf.h"
#include "tinylm/core/error.h"
#include "tinylm/io/gguf.h"

namespace {

void require(bool cond) {
  if (!cond) std::abort();
}

// What a successful parse promises: supported types, whole blocks, byte counts that match the
// dimensions, data inside the input.
void check_invariants(const tinylm::io::GgufFile& f, size_t input_size) {
  for (const tinylm::io::GgufTensor& t : f.tensors()) {
    require(tinylm::io::ggml_type_supported(static_cast<uint32_t>(t.type)));
    require(!t.ne.empty() && t.ne.size() <= 4);
    require(t.ne[0] % tinylm::io::ggml_block_size(t.type) == 0);
    require(t.bytes == tinylm::checkpoints::ggml_bytes(t.type, t.numel));
    require(t.offset % f.alignment() == 0);
    require(f.data(t).size() == t.bytes && t.bytes <= input_size);
    require(f.find_tensor(t.name) == &t);
  }
  for (const auto& [key, v] : f.metadata()) require(f.find(key) == &v);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const tinylm::io::GgufFile f =
        tinylm::io::GgufFile::from_bytes(std::as_bytes(std::span(data, size)), "fuzz.gguf");
    check_invariants(f, size);
    std::vector<float> values;
    for (const tinylm::io::GgufTensor& t : f.tensors()) {
      if (t.numel > (size_t{1} << 22)) continue;  // dimensions that only a large input can hold
      values.resize(t.numel);
      tinylm::checkpoints::decode_ggml(t.type, f.data(t), values);
    }
    try {
      const tinylm::gpt2::Config c = tinylm::checkpoints::read_gpt2_gguf_config(f);
      require(c.vocab_size > 0 && c.n_embd > 0);
    } catch (const tinylm::Error&) {
    }
    const tinylm::BpeTokenizer tok = tinylm::checkpoints::load_gguf_tokenizer(f);
    const std::vector<int> ids = tok.encode("fuzz the tokenizer");
    (void)tok.decode(ids);
  } catch (const tinylm::Error&) {
    // A rejected file: the expected outcome for most inputs.
  }
  return 0;
}
