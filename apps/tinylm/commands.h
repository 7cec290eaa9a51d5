#pragma once
// Each subcommand lives in its own cmd_*.cpp and registers itself on the root app.
#include <CLI/CLI.hpp>

namespace tinylm::cli {

void register_microgpt(CLI::App& app);
void register_generate(CLI::App& app);
void register_perplexity(CLI::App& app);
void register_tokenize(CLI::App& app);
void register_init(CLI::App& app);
void register_train_gpt2(CLI::App& app);
void register_train(CLI::App& app);
void register_plot(CLI::App& app);
void register_delta(CLI::App& app);

}  // namespace tinylm::cli
