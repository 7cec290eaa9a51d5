#pragma once
// RUN/metrics.jsonl: one JSON object per step and per evaluation (schema in docs/training.md),
// flushed line by line so a crash loses at most the line being written.
#include <cstdio>
#include <optional>
#include <string>

#include "tinylm/train/loop.h"

namespace tinylm::train {

class MetricsLog {
 public:
  // Appends to `path`. A resumed run first drops the lines after `resume_step` (the steps the
  // interrupted run made past its last checkpoint, which the resumed run makes again).
  MetricsLog(std::string path, std::optional<int64_t> resume_step);
  ~MetricsLog();
  MetricsLog(const MetricsLog&) = delete;
  MetricsLog& operator=(const MetricsLog&) = delete;

  // comm_s: seconds the step spent exchanging gradients and losses with other processes.
  void step(const StepRecord& r, std::optional<double> mfu,
            std::optional<double> comm_s = std::nullopt);
  void eval(const EvalRecord& e);

 private:
  void write_line(const std::string& line);

  std::string path_;
  std::FILE* f_ = nullptr;
};

}  // namespace tinylm::train
