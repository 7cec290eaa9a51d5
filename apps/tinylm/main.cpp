// tinylm: train and run small language models from the command line.
#include <cctype>
#include <cstdio>
#include <exception>
#include <optional>
#include <string>
#include <vector>

#include "cli_util.h"
#include "commands.h"
#include "standard_streams.h"
#include "suggest.h"
#include "tinylm/core/error.h"
#include "tinylm/distributed/comm.h"
#include "tinylm/kernels/cpu/isa.h"
#include "tinylm/kernels/matmul/bf16_dot.h"
#include "tinylm/kernels/quant/int_matmul.h"

namespace {

// Under mpirun an error on one process ends them all: the others would otherwise wait in
// their next collective forever.
int fail_run(int code) {
  if (tinylm::distributed::Comm::world().size() > 1) tinylm::distributed::Comm::abort(code);
  tinylm::distributed::Comm::finalize();
  return code;
}

int run(int argc, char** argv);

}  // namespace

int main(int argc, char** argv) {
  tinylm::cli::hold_standard_descriptors();
  tinylm::distributed::Comm::init(&argc, &argv);
  const int code = tinylm::cli::finish_stdout(run(argc, argv));
  if (code != 0) return fail_run(code);
  tinylm::distributed::Comm::finalize();
  return 0;
}

namespace {

using tinylm::cli::closest;
using tinylm::cli::kExitRuntime;

std::vector<std::string> flag_names(const CLI::App& cmd) {
  std::vector<std::string> names;
  for (const CLI::Option* o : cmd.get_options()) {
    for (const std::string& l : o->get_lnames()) names.push_back("--" + l);
    for (const std::string& l : o->get_snames()) names.push_back("-" + l);
  }
  return names;
}

// What a command takes besides flags, for an argument it did not expect: "its flags only", or
// its positionals' names ("IN OUT").
std::string positionals_of(const CLI::App& cmd) {
  std::string names;
  for (const CLI::Option* o : cmd.get_options()) {
    if (!o->get_positional()) continue;
    std::string name = o->get_name();
    for (char& c : name) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    names += (names.empty() ? "" : " ") + name;
  }
  return names.empty() ? "takes flags only" : "takes " + names + " and flags";
}

int usage_error(const std::string& message) {
  std::fprintf(stderr, "tinylm: error: %s\n", message.c_str());
  return tinylm::cli::kExitUsage;
}

// The kernels' instruction-set level (TINYLM_ISA or the best this CPU has) and the bf16 and
// int8 products' units (TINYLM_BF16_UNIT, TINYLM_INT8_UNIT), settled before anything runs: a bad
// value is one line, not an error in the middle of a command. 0, or the exit code.
int settle_kernels() {
  try {
    tinylm::kernels::active_isa();
    tinylm::kernels::bf16_dot_unit();
    tinylm::kernels::int8_dot_unit();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tinylm: error: %s\n", e.what());
    return kExitRuntime;
  }
  return 0;
}

void add_commands(CLI::App& app) {
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
  tinylm::cli::register_download(app);
  tinylm::cli::register_devices(app);
  tinylm::cli::register_completion(app);
}

std::vector<std::string> command_names(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands({})) names.push_back(sub->get_name());
  return names;
}

// The commands that `name` names: itself, else every command it begins ("gen": generate).
std::vector<std::string> matching_commands(const CLI::App& app, const std::string& name) {
  std::vector<std::string> found;
  for (const std::string& c : command_names(app)) {
    if (c == name) return {c};
    if (c.compare(0, name.size(), name) == 0) found.push_back(c);
  }
  return found;
}

const CLI::App* find_command(const CLI::App& app, const std::string& name) {
  const std::vector<std::string> found = matching_commands(app, name);
  if (found.size() != 1) return nullptr;
  for (const CLI::App* sub : app.get_subcommands({})) {
    if (sub->get_name() == found[0]) return sub;
  }
  return nullptr;
}

int unknown_command(const CLI::App& app, const std::string& name) {
  const std::vector<std::string> found = matching_commands(app, name);
  if (found.size() > 1) {
    std::string list;
    for (const std::string& c : found) list += (list.empty() ? "" : ", ") + c;
    return usage_error("'" + name + "' could be " + list + "; give more of the command's name");
  }
  const std::string near = closest(name, command_names(app));
  return usage_error("unknown command '" + name + "'" +
                     (near.empty() ? "" : " (did you mean '" + near + "'?)") +
                     "; tinylm --help lists them");
}

// tinylm help [COMMAND]
int help(const CLI::App& app, int argc, char** argv) {
  if (argc == 2) {
    std::fputs(app.help().c_str(), stdout);
    return 0;
  }
  if (argc > 3) return usage_error("help takes one command");
  const CLI::App* sub = find_command(app, argv[2]);
  if (!sub) return unknown_command(app, argv[2]);
  std::fputs(sub->help("tinylm").c_str(), stdout);  // as `tinylm CMD --help` prints it
  return 0;
}

// The first argument, when it is neither a command nor --help / --version: a usage error.
std::optional<int> check_first_argument(const CLI::App& app, int argc, char** argv) {
  if (argc < 2) return std::nullopt;
  const std::string a = argv[1];
  if (a[0] != '-') {
    if (find_command(app, a)) return std::nullopt;
    return unknown_command(app, a);
  }
  if (a == "-h" || a == "--help" || a == "--version") return std::nullopt;
  const std::string near = closest(a, {"--help", "--version"});
  return usage_error("unknown flag " + a + (near.empty() ? "" : " (did you mean " + near + "?)") +
                     "; give a command first: tinylm COMMAND [FLAGS] (tinylm --help)");
}

// The command the line names, as deep as it goes ("delta extract"), and where its arguments
// start.
struct Named {
  const CLI::App* top = nullptr;  // the command argv[1] names ("delta"), maybe by a prefix
  const CLI::App* cmd = nullptr;
  std::string name;  // "delta extract"
  int first = 1;
};
Named named_command(const CLI::App& app, int argc, char** argv) {
  Named n;
  n.top = n.cmd = argc > 1 ? find_command(app, argv[1]) : nullptr;
  if (!n.cmd) return n;
  n.name = n.cmd->get_name();
  n.first = 2;
  while (n.first < argc) {
    const CLI::App* deeper = nullptr;
    for (const CLI::App* s : n.cmd->get_subcommands({}))
      if (s->get_name() == argv[n.first]) deeper = s;
    if (!deeper) break;
    n.cmd = deeper;
    n.name += " " + deeper->get_name();
    ++n.first;
  }
  return n;
}

// The exit code of the exception app.parse() threw (a command's own errors included): called
// in a catch block. `named`: the command named on the command line, if any.
int exit_code(CLI::App& app, const Named& named, int argc, char** argv) {
  const CLI::App* sub = named.cmd;
  const std::string prefix = sub ? named.name + ": " : std::string();
  try {
    throw;
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // A mistyped flag is the likely cause of any parse error ("--modle x": --model is missing),
    // so it is named first.
    if (sub && !sub->get_subcommands({}).empty() && named.first < argc &&
        argv[named.first][0] != '-') {  // "delta extract"
      const std::string near = closest(argv[named.first], command_names(*sub));
      return usage_error(prefix + "unknown command '" + argv[named.first] + "'" +
                         (near.empty() ? "" : " (did you mean '" + near + "'?)") + "; tinylm " +
                         named.name + " --help lists them");
    }
    const std::string flag =
        sub ? tinylm::cli::unknown_flag(flag_names(*sub), argc, argv, named.first) : "";
    if (!flag.empty()) {
      const std::string nanogpt = tinylm::cli::nanogpt_flag_hint(named.name, flag);
      const std::string near = closest(flag, flag_names(*sub));
      const std::string hint = !nanogpt.empty() ? ": " + nanogpt
                               : near.empty()   ? ""
                                                : " (did you mean " + near + "?)";
      return usage_error(prefix + "unknown flag " + flag + hint + "; tinylm " + named.name +
                         " --help lists the flags");
    }
    // So is an argument the command does not take ("generate model.gguf": --model is missing).
    if (const std::vector<std::string> rest = sub ? sub->remaining() : std::vector<std::string>{};
        !rest.empty()) {
      return usage_error(prefix + "unexpected argument '" + rest.front() + "': " + named.name +
                         " " + positionals_of(*sub) +
                         tinylm::cli::argument_hint(named.name, rest.front()) + " (tinylm " +
                         named.name + " --help)");
    }
    return usage_error(prefix + e.what() + " (see --help)");
  } catch (const tinylm::cli::UsageError& e) {
    std::fflush(stdout);
    return usage_error(prefix + e.what());
  } catch (const tinylm::cli::ExitRequest& e) {
    std::fflush(stdout);
    return e.code;
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "tinylm: error: %s\n", e.what());
    return kExitRuntime;
  }
}

int run(int argc, char** argv) {
  if (const int code = settle_kernels(); code != 0) return code;
  CLI::App app{"tinylm: train and run small language models on CPUs and GPUs (Vulkan)", "tinylm"};
  add_commands(app);
  if (argc > 1 && std::string(argv[1]) == "help") return help(app, argc, argv);
  if (const std::optional<int> code = check_first_argument(app, argc, argv)) return *code;
  const Named named = named_command(app, argc, argv);
  // A command named by a unique prefix ("gen") is parsed under its full name.
  std::string full_name;
  std::vector<char*> args(argv, argv + argc);
  if (named.top && named.top->get_name() != argv[1]) {
    full_name = named.top->get_name();
    args[1] = full_name.data();
    argv = args.data();
  }
  try {
    app.parse(argc, argv);
  } catch (...) {
    return exit_code(app, named, argc, argv);
  }
  return 0;
}

}  // namespace
