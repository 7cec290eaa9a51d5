// libFuzzer target: arbitrary bytes as the body of a request to tinylm serve. The first byte
// picks the endpoint (/v1/completions, /v1/chat/completions, /tokenize, /detokenize), the rest
// is the body. Refusal must be an ApiError with a 4xx status; a request that is accepted must
// be one the engine can run: every prompt non-empty, its ids in the vocabulary, prompt +
// max_tokens within the context, sampling options valid, at most four non-empty stops.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz_scratch.h"
#include "tinylm/serve/api_error.h"
#include "tinylm/serve/request.h"

namespace {

using tinylm::fuzz::require;
namespace serve = tinylm::serve;

const serve::ModelInfo& model() {
  static const tinylm::BpeTokenizer tok =
      tinylm::BpeTokenizer::from_directory(TINYLM_SOURCE_DIR "/data/gpt2");
  static const serve::ModelInfo info = [] {
    serve::ModelInfo m;
    m.id = "fuzz";
    m.tokenizer = &tok;
    m.vocab_size = 50257;
    m.context = 64;
    m.eos_id = 50256;
    return m;
  }();
  return info;
}

void check_accepted(const serve::CompletionRequest& r) {
  const serve::ModelInfo& m = model();
  require(!r.prompts.empty() && r.prompts.size() <= serve::kMaxPrompts);
  for (const serve::Prompt& p : r.prompts) {
    require(!p.ids.empty());
    for (const int id : p.ids) require(id >= 0 && id < m.vocab_size);
    require(p.max_tokens >= 0 && static_cast<int64_t>(p.ids.size()) + p.max_tokens <= m.context);
  }
  r.params.sampling.validate();  // throwing here crashes: accepted options are valid
  require(r.params.stop.size() <= serve::kMaxStops + 2);  // + the chat template's two
  for (const std::string& s : r.params.stop) require(!s.empty());
  require(r.params.logprobs >= -1 && r.params.logprobs <= serve::kMaxLogprobs);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view body(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    switch (data[0] % 4) {
      case 0:
        check_accepted(serve::parse_completion(body, model(), 1));
        break;
      case 1:
        check_accepted(serve::parse_chat(body, model(), 1));
        break;
      case 2:
        for (const int id : serve::parse_tokenize(body, model())) require(id >= 0 && id < 50257);
        break;
      default:
        for (const int id : serve::parse_detokenize(body, model()))
          require(id >= 0 && id < model().tokenizer->vocab_size());
        break;
    }
  } catch (const serve::ApiError& e) {
    require(e.status >= 400 && e.status < 500);  // the client's fault, reported as such
  }
  return 0;
}
