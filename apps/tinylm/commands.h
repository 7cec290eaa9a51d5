#pragma once
// Each subcommand lives in its own cmd_*.cpp and registers itself on the root app.
#include <CLI/CLI.hpp>
#include <string>

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
void register_serve(CLI::App& app);
void register_convert(CLI::App& app);
// tinylm download REPO: a model from the Hugging Face Hub into the cache.
void register_download(CLI::App& app);
// tinylm devices: the Vulkan devices and their features.
void register_devices(CLI::App& app);
// tinylm completion bash: a completion script made from the registered commands and flags.
void register_completion(CLI::App& app);

// What tinylm --version prints: the version, then "kernels: ..." and "mpi: ..." (lines two and
// three, which scripts read), then the git commit, the compiler, the bf16 products' unit and
// the GPU ("gpu: vulkan, 1 device" or "gpu: none (why)").
std::string version_text();

// "vulkan, N devices", or "none (built without Vulkan | no Vulkan driver | no device)".
std::string gpu_summary();

}  // namespace tinylm::cli
