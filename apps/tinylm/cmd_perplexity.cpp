// tinylm perplexity: mean negative log-likelihood of a text under a GPT-2, EvermindLM or microgpt
// model, by sliding windows.
#include <cstdio>
#include <limits>

#include "cli_util.h"
#include "commands.h"
#include "model_kind.h"
#include "tinylm/core/error.h"
#include "tinylm/core/parallel.h"
#include "tinylm/families/gpt2.h"
#include "tinylm/generate/gpt2_perplexity.h"
#include "tinylm/generate/perplexity.h"
#include "tinylm/io/text_file.h"

namespace tinylm::cli {

void register_perplexity(CLI::App& app) {
  struct Flags {
    ModelFlags model;
    std::string file;
    int context = 0, stride = 0;
    int64_t limit = 0;
  };
  auto f = std::make_shared<Flags>();
  CLI::App* cmd = app.add_subcommand(
      "perplexity",
      "Perplexity of a text file under a GPT-2, EvermindLM or microgpt model (sliding windows)");
  f->model.add_to(cmd);
  cmd->add_option("-f,--file", f->file, "Text file (- : stdin)")->required();
  // Unset, they are 0 and take their defaults below; given, 0 is an error, not the default.
  cmd->add_option("-c,--context,--ctx-size", f->context,
                  "Window length in tokens, at least 2 (default: the model's positions; "
                  "EvermindLM: 4096)")
      ->check(CLI::Range(2, std::numeric_limits<int>::max()));
  cmd->add_option("--stride", f->stride, "Window step in tokens, at least 1 (default: context / 2)")
      ->check(CLI::Range(1, std::numeric_limits<int>::max()));
  cmd->add_option("--limit", f->limit, "Use only the text's first N tokens (0: all)")
      ->check(CLI::NonNegativeNumber);
  cmd->callback([f] {
    // Inputs are checked (flags as parsed, the text here) before the (slow, chatty) model load.
    const DetectedModel d = resolve_model("perplexity", f->model.model, "",
                                          families::those(families::scores_perplexity));
    check_load_flags(f->model, d, "scores");
    const std::string text = read_text_input(resolve_data_path(f->file));
    const BpeTokenizer tok = load_model_tokenizer(f->model, d);
    std::vector<int> tokens;
    try {
      tokens = encode_text(*d.family, tok, text, d.path);
    } catch (const Error& e) {  // a character outside a character vocabulary, say
      fail(f->file, ": ", e.what());
    }
    if (f->limit > 0 && static_cast<int64_t>(tokens.size()) > f->limit) tokens.resize(f->limit);
    set_num_threads(f->model.threads);
    TerminalProgress progress("perplexity", "tokens");
    const auto on_window = [&](int64_t scored, int64_t total) { progress.update(scored, total); };
    int context = 0, stride = 0;
    generate::PerplexityResult r;
    if (d.family == &families::gpt2_family) {
      // GPT-2 scores a window in one batched forward (generate/gpt2_perplexity.h).
      // A window's scored rows at most (the default context: the model's n_positions).
      f->model.load.logit_rows = f->context > 0 ? f->context : std::numeric_limits<int>::max();
      std::string loaded;
      gpt2::Model model = families::load_gpt2_weights(d, f->model.load, loaded);
      std::fprintf(stderr, "%s\n", loaded.c_str());
      check_tokenizer_fits(tok, model.config().vocab_size, f->model, d);
      context = f->context > 0 ? f->context : model.config().n_positions;
      stride = f->stride > 0 ? f->stride : std::max(1, context / 2);
      r = generate::perplexity(model, tokens, context, stride, on_window);
    } else {
      // The others through their decode interface (generate/perplexity.h); a model without a
      // context end takes the family's served context as its default window.
      const families::DecodeModel model = load_decoder(f->model, d);
      generate::DecodeBackend& backend = *model.backend;
      check_tokenizer_fits(tok, backend.vocab_size(), f->model, d);
      const int limit = backend.context_limit();
      context = f->context > 0 ? f->context : limit > 0 ? limit : d.family->context_without_end;
      stride = f->stride > 0 ? f->stride : std::max(1, context / 2);
      r = generate::perplexity(backend, tokens, context, stride, on_window);
    }
    progress.finish();
    std::printf("tokens %zu, scored %lld, mean NLL %.6f, perplexity %.4f\n", tokens.size(),
                static_cast<long long>(r.count), r.mean_nll(), r.perplexity());
    const double s = r.forward_ms / 1e3;
    std::fprintf(stderr,
                 "context %d, stride %d: %.1f s; %lld tokens through the model (%.0f tok/s), "
                 "%lld scored (%.0f tok/s)\n",
                 context, stride, s, static_cast<long long>(r.forward_tokens),
                 s > 0 ? r.forward_tokens / s : 0.0, static_cast<long long>(r.count),
                 s > 0 ? r.count / s : 0.0);
  });
}

}  // namespace tinylm::cli
