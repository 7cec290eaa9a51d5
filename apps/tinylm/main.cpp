// tinylm: train and run small language models from the command line.
#include <algorithm>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "cli_util.h"
#include "commands.h"
#include "standard_streams.h"
#include "tinylm/core/error.h"
#include "tinylm/kernels/cpu/isa.h"
#include "tinylm/kernels/matmul/bf16_dot.h"
#include "tinylm/train/comm.h"

namespace {

// Under mpirun an error on one process ends them all: the others would otherwise wait in
// their next collective forever.
int fail_run(int code) {
  if (tinylm::train::Comm::world().size() > 1) tinylm::train::Comm::abort(code);
  tinylm::train::Comm::finalize();
  return code;
}

int run(int argc, char** argv);

}  // namespace

int main(int argc, char** argv) {
  tinylm::cli::hold_standard_descriptors();
  tinylm::train::Comm::init(&argc, &argv);
  const int code = tinylm::cli::finish_stdout(run(argc, argv));
  if (code != 0) return fail_run(code);
  tinylm::train::Comm::finalize();
  return 0;
}

namespace {

// Edit distance, for "did you mean".
size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] != b[j - 1] ? 1 : 0)});
      diag = up;
    }
  }
  return row[b.size()];
}

// The closest of `names` to `word`, when it is close enough to be a likely typo.
std::string closest(const std::string& word, const std::vector<std::string>& names) {
  std::string best;
  size_t best_d = std::max<size_t>(3, word.size() / 3) + 1;
  for (const std::string& n : names) {
    const size_t d = edit_distance(word, n);
    if (d < best_d || (d == best_d && !best.empty() && n.size() < best.size())) {
      best = n;
      best_d = d;
    }
  }
  return best;
}

std::vector<std::string> flag_names(const CLI::App& cmd) {
  std::vector<std::string> names;
  for (const CLI::Option* o : cmd.get_options()) {
    for (const std::string& l : o->get_lnames()) names.push_back("--" + l);
  }
  return names;
}

// The first argument of `cmd` that names no flag of it: "--step" of "--step 10".
std::string unknown_flag(const CLI::App& cmd, int argc, char** argv, int from) {
  const std::vector<std::string> names = flag_names(cmd);
  for (int i = from; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--") break;
    if (a.rfind("--", 0) != 0) continue;
    a = a.substr(0, a.find('='));
    if (std::find(names.begin(), names.end(), a) == names.end()) return a;
  }
  return "";
}

int usage_error(const std::string& message) {
  std::fprintf(stderr, "tinylm: error: %s\n", message.c_str());
  return tinylm::cli::kExitUsage;
}

int run(int argc, char** argv) {
  using tinylm::cli::kExitRuntime;
  // The kernels' instruction-set level (TINYLM_ISA or the best this CPU has) and the bf16
  // products' unit (TINYLM_BF16_UNIT), settled before anything runs: a bad value is one line,
  // not an error in the middle of a command.
  try {
    tinylm::kernels::active_isa();
    tinylm::kernels::bf16_dot_unit();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tinylm: error: %s\n", e.what());
    return kExitRuntime;
  }
  CLI::App app{"tinylm: train and run small language models on the CPU", "tinylm"};
  app.require_subcommand(1);
  app.set_version_flag("--version", [] { return tinylm::cli::version_text(); });
  app.footer(
      "tinylm help COMMAND shows a command's flags. Exit codes: 0 success, 1 runtime error, "
      "2 usage error, 130/143 training interrupted by SIGINT/SIGTERM after saving a "
      "checkpoint; see docs/cli.md.");
  tinylm::cli::register_microgpt(app);
  tinylm::cli::register_generate(app);
  tinylm::cli::register_perplexity(app);
  tinylm::cli::register_tokenize(app);
  tinylm::cli::register_init(app);
  tinylm::cli::register_train_gpt2(app);
  tinylm::cli::register_train(app);
  tinylm::cli::register_plot(app);
  tinylm::cli::register_delta(app);
  tinylm::cli::register_serve(app);
  tinylm::cli::register_convert(app);
  tinylm::cli::register_completion(app);
  std::vector<std::string> commands;
  for (const CLI::App* sub : app.get_subcommands({})) commands.push_back(sub->get_name());
  const auto find = [&](const std::string& name) -> CLI::App* {
    for (CLI::App* sub : app.get_subcommands({})) {
      if (sub->get_name() == name) return sub;
    }
    return nullptr;
  };
  const auto unknown_command = [&](const std::string& name) {
    const std::string near = closest(name, commands);
    return usage_error("unknown command '" + name + "'" +
                       (near.empty() ? "" : " (did you mean '" + near + "'?)") +
                       "; tinylm --help lists them");
  };
  // tinylm help [COMMAND]
  if (argc > 1 && std::string(argv[1]) == "help") {
    if (argc == 2) {
      std::fputs(app.help().c_str(), stdout);
      return 0;
    }
    if (argc > 3) return usage_error("help takes one command");
    CLI::App* sub = find(argv[2]);
    if (!sub) return unknown_command(argv[2]);
    std::fputs(sub->help("tinylm").c_str(), stdout);  // as `tinylm CMD --help` prints it
    return 0;
  }
  if (argc > 1 && argv[1][0] != '-' && !find(argv[1])) return unknown_command(argv[1]);
  if (argc > 1 && argv[1][0] == '-') {
    const std::string a = argv[1];
    if (a != "-h" && a != "--help" && a != "--version") {
      const std::string near = closest(a, {"--help", "--version"});
      return usage_error("unknown flag " + a +
                         (near.empty() ? "" : " (did you mean " + near + "?)") +
                         "; give a command first: tinylm COMMAND [FLAGS] (tinylm --help)");
    }
  }
  CLI::App* sub = argc > 1 ? find(argv[1]) : nullptr;
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ExtrasError& e) {
    const std::string prefix = sub ? sub->get_name() + ": " : std::string();
    const std::string flag = sub ? unknown_flag(*sub, argc, argv, 2) : "";
    if (!flag.empty()) {
      const std::string near = closest(flag, flag_names(*sub));
      return usage_error(prefix + "unknown flag " + flag +
                         (near.empty() ? "" : " (did you mean " + near + "?)") + "; tinylm help " +
                         sub->get_name() + " lists the flags");
    }
    return usage_error(prefix + e.what() + " (tinylm help " +
                       (sub ? sub->get_name() : std::string("")) + ")");
  } catch (const CLI::ParseError& e) {
    const std::string prefix = sub ? sub->get_name() + ": " : std::string();
    return usage_error(prefix + e.what() + " (see --help)");
  } catch (const tinylm::cli::UsageError& e) {
    std::fflush(stdout);
    const std::string prefix = sub ? sub->get_name() + ": " : std::string();
    return usage_error(prefix + e.what());
  } catch (const tinylm::cli::ExitRequest& e) {
    std::fflush(stdout);
    return e.code;
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "tinylm: error: %s\n", e.what());
    return kExitRuntime;
  }
  return 0;
}

}  // namespace
