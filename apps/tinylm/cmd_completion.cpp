// tinylm version and tinylm completion: what the CLI says about itself.
#include <cstdio>
#include <string>

#include "cli_util.h"
#include "commands.h"
#include "tinylm/kernels/cpu/isa.h"
#include "tinylm/train/comm.h"
#include "tinylm_git_commit.h"

namespace tinylm::cli {

std::string version_text() {
#if defined(__clang__)
  const std::string compiler = std::string("clang ") + __clang_version__;
#elif defined(__GNUC__)
  const std::string compiler = std::string("GCC ") + __VERSION__;
#else
  const std::string compiler = "unknown";
#endif
  return "tinylm 0.1.0\nkernels: " + kernels::isa_summary() +
         "\nmpi: " + (train::Comm::built_with_mpi() ? "yes" : "no") +
         "\ncommit: " + TINYLM_GIT_COMMIT + "\ncompiler: " + compiler;
}

namespace {

// The values --dtype takes (generate / perplexity, gpt2_common.cpp).
constexpr const char* kDtypeValues = "f32 bf16 f16 q8_0 q4_0";

// A bash completion script: commands after "tinylm", each command's flags after it, --dtype's
// values after it, file names for everything else.
std::string bash_completion(const CLI::App& app) {
  std::string commands = "help completion", cases;
  for (const CLI::App* sub : app.get_subcommands({})) {
    if (sub->get_name() == "completion") continue;
    commands += " " + sub->get_name();
    std::string flags = "--help";
    for (const CLI::Option* o : sub->get_options()) {
      for (const std::string& l : o->get_lnames()) {
        if (l != "help") flags += " --" + l;
      }
    }
    for (const CLI::App* subsub : sub->get_subcommands({})) flags += " " + subsub->get_name();
    cases += "    " + sub->get_name() + ") words=\"" + flags + "\" ;;\n";
  }
  return "# bash completion for tinylm (tinylm completion bash > /etc/bash_completion.d/tinylm)\n"
         "_tinylm() {\n"
         "  local cur=\"${COMP_WORDS[COMP_CWORD]}\" words\n"
         "  if [ \"$COMP_CWORD\" -eq 1 ]; then\n"
         "    COMPREPLY=($(compgen -W \"" +
         commands +
         " --help --version\" -- \"$cur\"))\n"
         "    return\n"
         "  fi\n"
         "  case \"${COMP_WORDS[1]}\" in\n" +
         cases + "    help) words=\"" + commands +
         "\" ;;\n"
         "    *) words=\"\" ;;\n"
         "  esac\n"
         "  case \"${COMP_WORDS[COMP_CWORD-1]}\" in\n"
         "    --dtype) COMPREPLY=($(compgen -W \"" +
         std::string(kDtypeValues) +
         "\" -- \"$cur\")); return ;;\n"
         "  esac\n"
         "  if [[ \"$cur\" == -* || \"${COMP_WORDS[1]}\" == help ]]; then\n"
         "    COMPREPLY=($(compgen -W \"$words\" -- \"$cur\"))\n"
         "  else\n"
         "    COMPREPLY=($(compgen -f -- \"$cur\"))\n"
         "  fi\n"
         "}\n"
         "complete -o filenames -F _tinylm tinylm\n";
}

}  // namespace

void register_completion(CLI::App& app) {
  auto shell = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand(
      "completion", "Print a shell completion script: tinylm completion bash >> ~/.bashrc");
  cmd->add_option("shell", *shell, "bash")->required()->check(CLI::IsMember({"bash"}));
  CLI::App* root = &app;
  // The lambda keeps `shell` alive: CLI11 writes the parsed value through the reference.
  cmd->callback([root, shell] {
    if (*shell == "bash") std::fputs(bash_completion(*root).c_str(), stdout);
  });
}

}  // namespace tinylm::cli
