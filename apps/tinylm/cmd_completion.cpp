// tinylm version and tinylm completion: what the CLI says about itself.
#include <algorithm>
#include <cstdio>
#include <string>

#include "cli_util.h"
#include "commands.h"
#include "tinylm/distributed/comm.h"
#include "tinylm/kernels/cpu/isa.h"
#include "tinylm/kernels/matmul/bf16_dot.h"
#include "tinylm/kernels/quant/int_matmul.h"
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
         "\nmpi: " + (distributed::Comm::built_with_mpi() ? "yes" : "no") +
         "\ncommit: " + TINYLM_GIT_COMMIT + "\ncompiler: " + compiler +
         "\nbf16 products: " + kernels::bf16_products_summary() +
         "\nint8 products: " + kernels::int8_products_summary() + "\ngpu: " + gpu_summary();
}

namespace {

// The values an option is checked against (CLI::IsMember: its type name ends in
// ":{a,b,c}"), space-separated; empty for any other option.
std::string member_values(const CLI::Option& o) {
  const std::string type = o.get_type_name();
  const size_t open = type.find(":{"), close = type.rfind('}');
  if (open == std::string::npos || close == std::string::npos || close < open) return "";
  std::string values = type.substr(open + 2, close - open - 2);
  std::replace(values.begin(), values.end(), ',', ' ');
  return values;
}

// A bash completion script: commands after "tinylm", each command's flags after it, the
// values a flag is checked against after it (each command's own: convert --dtype is not
// generate --dtype), file names for everything else.
std::string bash_completion(const CLI::App& app) {
  std::string commands = "help completion", cases, value_cases;
  for (const CLI::App* sub : app.get_subcommands({})) {
    if (sub->get_name() == "completion") continue;
    commands += " " + sub->get_name();
    std::string flags = "--help";
    for (const CLI::Option* o : sub->get_options()) {
      for (const std::string& l : o->get_lnames()) {
        if (l == "help") continue;
        flags += " --" + l;
        const std::string values = member_values(*o);
        if (!values.empty()) {
          value_cases += "    \"" + sub->get_name() + " --" + l + "\") COMPREPLY=($(compgen -W \"" +
                         values + "\" -- \"$cur\")); return ;;\n";
        }
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
         "  case \"${COMP_WORDS[1]} ${COMP_WORDS[COMP_CWORD-1]}\" in\n" +
         value_cases +
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
