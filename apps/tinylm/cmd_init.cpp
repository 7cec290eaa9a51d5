// tinylm init: a freshly initialised model directory in the Hugging Face layout.
#include <cstdio>
#include <filesystem>

#include "cli_util.h"
#include "commands.h"
#include "tinylm/checkpoints/gpt2_checkpoint.h"
#include "tinylm/core/parallel.h"
#include "tinylm/core/timer.h"
#include "tinylm/families/gpt2.h"
#include "tinylm/io/staged_dir.h"
#include "tinylm/models/gpt2/init.h"

namespace tinylm::cli {

void register_init(CLI::App& app) {
  struct Flags {
    std::string arch = "gpt2", preset, out, tokenizer;
    uint64_t seed = 0;
    int threads = 0;
  };
  auto f = std::make_shared<Flags>();
  CLI::App* cmd = app.add_subcommand("init",
                                     "Write a freshly initialised model directory (config.json, "
                                     "model.safetensors, tokenizer.json)");
  cmd->add_option("--arch", f->arch, "Architecture")
      ->check(CLI::IsMember({"gpt2"}))
      ->capture_default_str();
  cmd->add_option("--preset", f->preset, "124M, baby, mini or small-test")->required();
  cmd->add_option("--out", f->out, "Output directory")->required();
  cmd->add_option("--seed", f->seed, "Initialisation seed")->capture_default_str();
  cmd->add_option("--tokenizer", f->tokenizer, "Tokenizer to copy (default: data/gpt2)");
  cmd->add_option("--threads", f->threads, "Threads (default: all cores)")
      ->check(CLI::Range(1, max_threads()));
  cmd->callback([f] {
    set_num_threads(f->threads);
    Timer timer;
    const gpt2::Config config = gpt2::preset(f->preset);
    // The directory is written whole or not at all (io/staged_dir.h): checked before the
    // work, staged beside --out, renamed into place. An earlier init's directory is replaced.
    const std::vector<std::string> files = {"config.json", "model.safetensors", "tokenizer.json"};
    io::check_staged_target(f->out, files, checkpoints::gpt2_saved_bytes(config));
    TerminalProgress progress("init", "M parameters", 1e6);  // on a terminal only
    const std::vector<float> params = gpt2::init_params(
        config, f->seed,
        [&progress](int64_t done, int64_t total) { progress.update(done, total); });
    progress.finish();
    const BpeTokenizer tok = families::load_gpt2_tokenizer(f->tokenizer);
    io::StagedDir out(f->out, files);
    checkpoints::save_gpt2(out.path(), config, params);
    tok.save_tokenizer_json(out.file("tokenizer.json"));
    out.commit();
    std::printf("wrote %s: GPT-2 %s, %zu parameters\n", f->out.c_str(), f->preset.c_str(),
                params.size());
    std::fprintf(stderr, "init %.0f ms\n", timer.elapsed_ms());
  });
}

}  // namespace tinylm::cli
