// microgpt's standard workloads: the first 100 names (unshuffled), the tokenizer of all
// names, deterministic weights w_i = 0.08 sin(0.37 i + 0.11):
//   (1) forward loss over the 100 docs, (2) forward + backward, (3) one Adam step per doc,
//   (4) the whole default run (data load, 1000 steps, 20 samples), in process and as a
//       process, with the bare process start measured on its own.
// Prints a table (or, with --json, one JSON object for bench/compare/microgpt_torch.py).
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <sstream>
#include <string>

#include "bench_util.h"
#include "tinylm/io/text_file.h"
#include "tinylm/models/microgpt/model.h"
#include "tinylm/optim/adam.h"
#include "tinylm/tokenizers/char_tokenizer.h"
#include "tinylm/train/microgpt_run.h"

using namespace tinylm;

namespace {

struct Workloads {
  std::vector<std::vector<int>> docs;  // the first 100 names, encoded
};

void set_weights(microgpt::Model& m) {
  std::span<double> p = m.params();
  for (size_t i = 0; i < p.size(); ++i)
    p[i] = 0.08 * std::sin(0.37 * static_cast<double>(i) + 0.11);
}

struct Figures {
  bench::Stats forward, fwd_bwd, adam;
  double loss_sum = 0;
};

Figures run_engine(microgpt::Engine engine, const Workloads& w, int reps) {
  auto model = microgpt::make_model(microgpt::Config{}, engine);
  Figures f;
  set_weights(*model);
  f.forward = bench::time_it(2, reps, [&] {
    double s = 0;
    for (const auto& d : w.docs) s += model->loss(d);
    f.loss_sum = s;
  });
  f.fwd_bwd = bench::time_it(2, reps, [&] {
    for (const auto& d : w.docs) model->loss_and_grad(d);
    model->zero_grads();
  });
  f.adam = bench::time_it(2, reps, [&] {
    set_weights(*model);
    optim::Adam<double> adam(model->params().size(), {0.85, 0.99, 1e-8, 0.0});
    int step = 0;
    for (const auto& d : w.docs) {
      model->loss_and_grad(d);
      adam.step(model->params(), model->grads(), 0.01 * (1 - step / 1000.0), step + 1);
      ++step;
    }
  });
  return f;
}

// Wall time of `cmd` run through /bin/sh with output discarded.
double time_command(const std::string& cmd) {
  Timer t;
  const int rc = std::system((cmd + " >/dev/null 2>&1").c_str());
  if (rc != 0) std::fprintf(stderr, "warning: '%s' exited with %d\n", cmd.c_str(), rc);
  return t.elapsed_ms();
}

}  // namespace

int main(int argc, char** argv) {
  bool json = false;
  int reps = 11;
  std::string data = "data/names.txt";
  std::string cli = std::string(TINYLM_CLI_PATH);
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--json"))
      json = true;
    else if (!std::strcmp(argv[i], "--reps") && i + 1 < argc)
      reps = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--data") && i + 1 < argc)
      data = argv[++i];
    else {
      std::fprintf(stderr, "usage: %s [--json] [--reps N] [--data names.txt]\n", argv[0]);
      return 2;
    }
  }
  try {
    const io::Documents file = io::read_documents(data);
    const CharTokenizer tok = CharTokenizer::from_documents(file.views());
    Workloads w;
    for (size_t i = 0; i < 100 && i < file.size(); ++i) {
      w.docs.push_back(tok.encode_document(file[i]));
    }

    const Figures tensor = run_engine(microgpt::Engine::tensor, w, reps);
    const Figures scalar = run_engine(microgpt::Engine::scalar, w, std::max(3, reps / 3));

    train::MicrogptOptions opt;
    opt.data_path = data;
    const bench::Stats full = bench::time_it(1, reps, [&] {
      std::ostringstream sink;
      train::run_microgpt(opt, sink);
    });
    // A process: start-up, data load, 1000 steps, 20 samples, output.
    const bench::Stats process =
        bench::time_it(1, reps, [&] { time_command(cli + " microgpt --data " + data); });
    // The bare start is --help: --version also probes the GPU devices (Mesa's lavapipe among
    // them where it is installed), which microgpt never does.
    const bench::Stats start = bench::time_it(1, reps, [&] { time_command(cli + " --help"); });

    if (json) {
      std::printf(
          "{\"level\": \"%s\", \"forward_ms\": %.4f, \"fwd_bwd_ms\": %.4f, \"adam_ms\": %.4f, "
          "\"full_run_ms\": %.4f, "
          "\"full_run_process_ms\": %.4f, \"process_start_ms\": %.4f, \"forward_loss_sum\": %.17g, "
          "\"scalar_forward_ms\": %.4f, \"scalar_fwd_bwd_ms\": %.4f, \"scalar_adam_ms\": %.4f}\n",
          kernels::isa_name(kernels::active_isa()).data(), tensor.forward.median_ms,
          tensor.fwd_bwd.median_ms, tensor.adam.median_ms, full.median_ms, process.median_ms,
          start.median_ms, tensor.loss_sum, scalar.forward.median_ms, scalar.fwd_bwd.median_ms,
          scalar.adam.median_ms);
      return 0;
    }
    std::printf("%s\nmicrogpt workloads, median of %d runs (ms)\n", bench::level_line().c_str(),
                reps);
    std::printf("%-40s %10s %10s\n", "workload", "tensor", "scalar");
    std::printf("%-40s %10.3f %10.3f\n", "(1) forward, 100 docs", tensor.forward.median_ms,
                scalar.forward.median_ms);
    std::printf("%-40s %10.3f %10.3f\n", "(2) forward+backward, 100 docs", tensor.fwd_bwd.median_ms,
                scalar.fwd_bwd.median_ms);
    std::printf("%-40s %10.3f %10.3f\n", "(3) Adam step per doc, 100 docs", tensor.adam.median_ms,
                scalar.adam.median_ms);
    std::printf("%-40s %10.3f\n", "(4) default run, in process", full.median_ms);
    std::printf("%-40s %10.3f\n", "(4) default run, whole process", process.median_ms);
    std::printf("%-40s %10.3f\n", "    bare process start (--help)", start.median_ms);
    std::printf("%-40s %10.3f\n", "    default run minus process start",
                process.median_ms - start.median_ms);
    std::printf("forward loss sum over the 100 docs: %.17g (tensor), %.17g (scalar)\n",
                tensor.loss_sum, scalar.loss_sum);
    std::printf(
        "pure-Python microgpt (issue figures): 4.7 s, 13 s, 14 s, ~6 min -> (3) %.0fx, (4) %.0fx "
        "faster\n",
        14000.0 / tensor.adam.median_ms, 360000.0 / full.median_ms);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
