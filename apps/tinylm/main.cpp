// tinylm: train and run small language models from the command line.
#include <cstdio>
#include <exception>

#include "commands.h"
#include "tinylm/core/error.h"
#include "tinylm/kernels/cpu/isa.h"
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
  tinylm::train::Comm::init(&argc, &argv);
  const int code = run(argc, argv);
  if (code != 0) return fail_run(code);
  tinylm::train::Comm::finalize();
  return 0;
}

namespace {

int run(int argc, char** argv) {
  // The kernels' instruction-set level (TINYLM_ISA or the best this CPU has), settled before
  // anything runs: a bad TINYLM_ISA is one line, not an error in the middle of a command.
  try {
    tinylm::kernels::active_isa();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tinylm: error: %s\n", e.what());
    return 1;
  }
  CLI::App app{"tinylm: train and run small language models on the CPU", "tinylm"};
  app.require_subcommand(1);
  app.set_version_flag("--version", [] {
    return "tinylm 0.1.0\nkernels: " + tinylm::kernels::isa_summary() +
           "\nmpi: " + (tinylm::train::Comm::built_with_mpi() ? "yes" : "no");
  });
  tinylm::cli::register_microgpt(app);
  tinylm::cli::register_generate(app);
  tinylm::cli::register_perplexity(app);
  tinylm::cli::register_tokenize(app);
  tinylm::cli::register_init(app);
  tinylm::cli::register_train_gpt2(app);
  tinylm::cli::register_train(app);
  tinylm::cli::register_plot(app);
  tinylm::cli::register_delta(app);
  const auto known = [&](const char* name) {
    for (const CLI::App* sub : app.get_subcommands({})) {
      if (sub->get_name() == name) return true;
    }
    return false;
  };
  if (argc > 1 && argv[1][0] != '-' && !known(argv[1])) {
    std::fprintf(stderr, "tinylm: error: unknown command '%s' (see --help)\n", argv[1]);
    return 2;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "tinylm: error: %s (see --help)\n", e.what());
    return e.get_exit_code() != 0 ? e.get_exit_code() : 2;
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "tinylm: error: %s\n", e.what());
    return 1;
  }
  return 0;
}

}  // namespace
