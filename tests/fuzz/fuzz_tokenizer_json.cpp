// libFuzzer target: arbitrary bytes into BpeTokenizer::from_tokenizer_json_text. Rejection
// must be a tinylm::Error; anything else (another exception, a sanitizer report, a broken
// invariant) crashes so the fuzzer reports it. When the file loads, the vocabulary's
// invariants are checked and a few texts (the input itself among them) are encoded and
// decoded back.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "tinylm/core/error.h"
#include "tinylm/tokenizers/bpe.h"

namespace {

void require(bool cond) {
  if (!cond) std::abort();
}

// What a successful load promises: ids 0..N-1 each name one non-empty token, <|endoftext|>
// where eot_id says, special ids in order and in range. (No merges is a valid vocabulary: the
// bytes, or a text's characters.)
void check_vocabulary(const tinylm::BpeTokenizer& t) {
  require(t.vocab_size() > 0);
  require(t.num_merges() >= 0);
  for (int id = 0; id < t.vocab_size(); ++id) {
    const std::string& token = t.token(id);
    require(!token.empty());
    require(t.token_id(token) == id);
  }
  if (const std::optional<int> eot = t.eot_id()) require(t.token(*eot) == "<|endoftext|>");
  int last = -1;
  for (int id : t.special_ids()) {
    require(id > last && id < t.vocab_size());
    last = id;
  }
}

// Ordinary text decodes back to itself (invalid UTF-8 replaced), unless the vocabulary lacks
// a byte's token, which is an Error. The streaming decoder agrees with decode.
void check_round_trip(const tinylm::BpeTokenizer& t, std::string_view text) {
  std::vector<int> ids;
  try {
    ids = t.encode(text);
  } catch (const tinylm::Error&) {
    return;
  }
  for (int id : ids) require(id >= 0 && id < t.vocab_size());
  const std::string decoded = t.decode(ids);
  require(decoded == tinylm::sanitize_utf8(text));
  tinylm::StreamDecoder stream(t);
  std::string streamed;
  for (int id : ids) streamed += stream.push(id);
  streamed += stream.finish();
  require(streamed == decoded);
  // With special tokens allowed the ids may differ, but stay in range and decode.
  try {
    for (int id : t.encode(text, /*allow_special=*/true)) require(id >= 0 && id < t.vocab_size());
  } catch (const tinylm::Error&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  try {
    const tinylm::BpeTokenizer t =
        tinylm::BpeTokenizer::from_tokenizer_json_text(input, "fuzz/tokenizer.json");
    check_vocabulary(t);
    for (std::string_view text : {std::string_view("Hello world, it's 42!\n\n  x"),
                                  std::string_view("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"),
                                  std::string_view("caf\xC3\xA9 \xF0\x9F\x98\x80 \xED\xA0\x80"),
                                  std::string_view("<|endoftext|>ab<|endoftext|")}) {
      check_round_trip(t, text);
    }
    check_round_trip(t, input.substr(0, 512));
  } catch (const tinylm::Error&) {
    // A rejected file: the expected outcome for most inputs.
  }
  return 0;
}
