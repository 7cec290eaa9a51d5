// tinylm generate: text from a GPT-2 checkpoint (or, with --arch evermind, an EvermindLM one),
// streamed as it is produced.
#include <cstdio>
#include <iostream>

#include "commands.h"
#include "evermind_common.h"
#include "gpt2_common.h"
#include "tinylm/core/error.h"
#include "tinylm/core/parallel.h"
#include "tinylm/core/timer.h"
#include "tinylm/generate/evermind_generate.h"
#include "tinylm/generate/gpt2_generate.h"

namespace tinylm::cli {

namespace {

struct GenerateFlags {
  std::string arch = "gpt2";
  Gpt2Flags model;
  std::string prompt;
  generate::GenerateOptions gen;
  bool ignore_eos = false;
  bool allow_special = false;
};

// EvermindLM: incremental decoding, f32 weights from the EVL0 checkpoint.
void generate_evermind(const GenerateFlags& f) {
  check(f.model.dtype == "f32", "--dtype ", f.model.dtype, ": EvermindLM generates in f32");
  set_num_threads(f.model.threads);
  const BpeTokenizer tok = load_evermind_tokenizer(f.model.tokenizer, f.model.model);
  Timer load;
  const evermind::Model<float> model = load_evermind(f.model.model, 2);
  std::fprintf(stderr, "loaded %s: %zu parameters (f32) in %.1f ms\n", f.model.model.c_str(),
               model.params().size(), load.elapsed_ms());
  generate::EvermindGenerateOptions g;
  g.max_new_tokens = f.gen.max_tokens;
  g.temperature = f.gen.sampling.temperature;
  g.top_k = f.gen.sampling.top_k;
  g.top_p = f.gen.sampling.top_p;
  g.seed = f.gen.sampling.seed;
  g.stop_token = f.ignore_eos ? -1 : tok.eot_id().value_or(-1);
  std::fputs(f.prompt.c_str(), stdout);
  std::fflush(stdout);
  Timer timer;
  size_t bytes = 0;
  generate::generate_text(model, tok, f.prompt, g, [&](std::string_view piece) {
    bytes += piece.size();
    std::fwrite(piece.data(), 1, piece.size(), stdout);
    std::fflush(stdout);
  });
  std::fputs("\n", stdout);
  std::fprintf(stderr, "generated %zu bytes in %.1f ms\n", bytes, timer.elapsed_ms());
}

}  // namespace

void register_generate(CLI::App& app) {
  auto f = std::make_shared<GenerateFlags>();
  CLI::App* cmd = app.add_subcommand(
      "generate", "Generate text with a GPT-2 (KV cache) or EvermindLM checkpoint, streaming");
  cmd->add_option("--arch", f->arch,
                  "gpt2 (a model directory) or evermind (a .evl file + its tokenizer)")
      ->check(CLI::IsMember({"gpt2", "evermind"}))
      ->capture_default_str();
  f->model.add_to(cmd);
  cmd->add_option("--prompt", f->prompt, "Prompt text")->required();
  cmd->add_option("--max-tokens", f->gen.max_tokens, "Tokens to generate")->capture_default_str();
  cmd->add_option("--temperature", f->gen.sampling.temperature, "0: greedy")->capture_default_str();
  cmd->add_option("--top-k", f->gen.sampling.top_k, "Sample from the k most likely (0: all)")
      ->capture_default_str();
  cmd->add_option("--top-p", f->gen.sampling.top_p, "Nucleus sampling mass (1: off)")
      ->capture_default_str();
  cmd->add_option("--seed", f->gen.sampling.seed, "Sampling seed")->capture_default_str();
  cmd->add_flag("--ignore-eos", f->ignore_eos, "Do not stop at <|endoftext|>");
  cmd->add_flag("--allow-special", f->allow_special, "Recognize <|endoftext|> in the prompt");
  cmd->callback([f] {
    f->gen.sampling.validate();
    if (f->arch == "evermind") return generate_evermind(*f);
    const BpeTokenizer tok = load_tokenizer(f->model.tokenizer, f->model.model);
    const std::vector<int> prompt = tok.encode(f->prompt, f->allow_special);
    check(!prompt.empty(), "--prompt is empty");
    gpt2::Model model = load_model(f->model);
    f->gen.eos_id = f->ignore_eos ? -1 : tok.eot_id().value_or(-1);
    StreamDecoder out(tok);
    std::fputs(f->prompt.c_str(), stdout);
    std::fflush(stdout);
    const generate::GenerateResult r = generate::generate(model, prompt, f->gen, [&](int id) {
      if (id != f->gen.eos_id) std::fputs(out.push(id).c_str(), stdout);
      std::fflush(stdout);
      return true;
    });
    std::fputs(out.finish().c_str(), stdout);
    std::fputs("\n", stdout);
    std::fflush(stdout);
    if (r.hit_context_end) {
      std::fprintf(stderr, "stopped: reached the model's context of %d positions\n",
                   model.config().n_positions);
    }
    const double steps = r.ids.size() > 1 ? static_cast<double>(r.ids.size() - 1) : 1.0;
    std::fprintf(stderr,
                 "prompt %zu tokens: prefill %.1f ms (%.0f tok/s); %zu tokens: decode %.1f tok/s\n",
                 prompt.size(), r.prefill_ms, prompt.size() * 1000.0 / r.prefill_ms, r.ids.size(),
                 r.decode_ms > 0 ? steps * 1000.0 / r.decode_ms : 0.0);
  });
}

}  // namespace tinylm::cli
