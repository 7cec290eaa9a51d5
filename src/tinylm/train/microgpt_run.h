#pragma once
// The whole microgpt.py program as a library call: read and shuffle the documents, build
// the tokenizer, initialise (or load) the model, train one document per step with Adam and
// a linearly decaying learning rate, then sample. Output lines are microgpt.py's.
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "tinylm/models/microgpt/model.h"

namespace tinylm::train {

struct MicrogptOptions {
  std::string data_path = "data/names.txt";
  microgpt::Config model;  // vocab_size is set from the data
  microgpt::Engine engine = microgpt::Engine::tensor;
  std::optional<int> steps;  // default: 1000, or 0 when a model is loaded
  double lr = 0.01;
  double beta1 = 0.85, beta2 = 0.99, eps = 1e-8;
  double temperature = 0.5;
  int samples = 20;
  uint64_t seed = 42;
  std::string load_path;  // start from these weights instead of the random init
  std::string save_path;  // write the trained model here
};

struct MicrogptTimings {
  double setup_ms = 0, train_ms = 0, sample_ms = 0;
};

struct MicrogptResult {
  std::vector<double> losses;  // one per step
  std::vector<std::string> samples;
  MicrogptTimings timings;
};

// Runs the program, writing microgpt.py's lines to `out`. With `carriage_return` the step
// lines overwrite each other (for a terminal). Throws Error on bad options or input.
MicrogptResult run_microgpt(const MicrogptOptions& options, std::ostream& out,
                            bool carriage_return = false);

}  // namespace tinylm::train
