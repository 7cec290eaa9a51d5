// tinylm perplexity: mean negative log-likelihood of a text under a GPT-2 checkpoint.
#include <cstdio>

#include "commands.h"
#include "gpt2_common.h"
#include "tinylm/core/timer.h"
#include "tinylm/generate/gpt2_generate.h"
#include "tinylm/io/text_file.h"

namespace tinylm::cli {

void register_perplexity(CLI::App& app) {
  struct Flags {
    Gpt2Flags model;
    std::string file;
    int context = 0, stride = 0;
  };
  auto f = std::make_shared<Flags>();
  CLI::App* cmd = app.add_subcommand(
      "perplexity", "Perplexity of a text file under a GPT-2 checkpoint (sliding windows)");
  f->model.add_to(cmd);
  cmd->add_option("--file", f->file, "Text file")->required();
  cmd->add_option("--context", f->context, "Window length in tokens (default: n_positions)");
  cmd->add_option("--stride", f->stride, "Window step in tokens (default: context / 2)");
  cmd->callback([f] {
    // Inputs are checked before the (slow, chatty) model load.
    const std::string text = io::read_file(f->file);
    const BpeTokenizer tok = load_tokenizer(f->model.tokenizer, f->model.model);
    const std::vector<int> tokens = tok.encode(text);
    gpt2::Model model = load_model(f->model);
    const int context = f->context > 0 ? f->context : model.config().n_positions;
    const int stride = f->stride > 0 ? f->stride : std::max(1, context / 2);
    Timer timer;
    const generate::PerplexityResult r = generate::perplexity(model, tokens, context, stride);
    std::printf("tokens %zu, scored %lld, mean NLL %.6f, perplexity %.4f\n", tokens.size(),
                static_cast<long long>(r.count), r.mean_nll(), r.perplexity());
    std::fprintf(stderr, "context %d, stride %d: %.0f ms\n", context, stride, timer.elapsed_ms());
  });
}

}  // namespace tinylm::cli
