#pragma once
// Each subcommand lives in its own cmd_*.cpp and registers itself on the root app.
#include <CLI/CLI.hpp>

namespace tinylm::cli {

void register_microgpt(CLI::App& app);

}  // namespace tinylm::cli
