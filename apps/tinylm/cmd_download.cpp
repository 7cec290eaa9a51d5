// tinylm download: a model's files from the Hugging Face Hub into the cache (hub/download.h).
#include <unistd.h>

#include <cstdio>

#include "cli_util.h"
#include "commands.h"
#include "tinylm/core/error.h"
#include "tinylm/hub/download.h"

namespace tinylm::cli {

void register_download(CLI::App& app) {
  struct Flags {
    std::string repo, out, include;
  };
  auto f = std::make_shared<Flags>();
  CLI::App* cmd = app.add_subcommand(
      "download",
      "Fetch a model (config, tokenizer, safetensors or GGUF weights) from the Hugging Face Hub "
      "into the cache ($TINYLM_CACHE, default ~/.cache/tinylm); HF_ENDPOINT and HF_TOKEN as "
      "the Hub's own tools read them");
  cmd->add_option("repo", f->repo, "ORG/NAME[@REVISION] (a branch, tag or commit; default main)")
      ->required();
  cmd->add_option("--out", f->out,
                  "Also place the model's files in this directory (replaced as a whole); stdout "
                  "then names DIR (or its .gguf) instead of the cached snapshot");
  cmd->add_option("--include", f->include,
                  "Glob choosing the weights among the repository's safetensors and GGUF files "
                  "(needed when it holds several GGUFs), e.g. '*q8_0.gguf'");
  cmd->callback([f] {
    hub::RepoSpec spec;
    try {
      spec = hub::parse_repo_spec(f->repo);
    } catch (const Error& e) {
      throw UsageError(e.what());
    }
    const hub::HubOptions o = hub::hub_options_from_env();
    hub::Progress progress(stderr, isatty(STDERR_FILENO) != 0);
    const hub::Snapshot s = hub::download_model(o, spec, f->include, progress);
    if (!f->out.empty()) {
      hub::place_model(s, f->out);
      // The model in DIR: DIR itself, or its .gguf.
      const std::string inside = s.model.substr(s.dir.size());
      std::printf("%s%s\n", f->out.c_str(), inside.c_str());
    } else {
      std::printf("%s\n", s.model.c_str());
    }
    std::fprintf(stderr, "%s: commit %s, %zu files in %s\n", spec.text().c_str(), s.commit.c_str(),
                 s.files.size(), s.dir.c_str());
  });
}

}  // namespace tinylm::cli
