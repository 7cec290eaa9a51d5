#include "tinylm/train/metrics_log.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tinylm/core/error.h"
#include "tinylm/io/atomic_file.h"

namespace tinylm::train {

using json = nlohmann::ordered_json;

namespace {

// The file's lines up to and including `step`'s (lines that do not parse are dropped too:
// the torn last line of a crash).
void truncate_after(const std::string& path, int64_t step) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return;
  std::string kept, line;
  while (std::getline(in, line)) {
    const json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_object() && j.contains("step") && j["step"].is_number_integer() &&
        j["step"].get<int64_t>() <= step) {
      kept += line + '\n';
    } else if (j.is_object() && !j.contains("step")) {
      kept += line + '\n';
    }
  }
  io::AtomicFile out(path);
  out.write(std::as_bytes(std::span<const char>(kept)));
  out.commit();
}

}  // namespace

MetricsLog::MetricsLog(std::string path, std::optional<int64_t> resume_step)
    : path_(std::move(path)) {
  if (resume_step) truncate_after(path_, *resume_step);
  f_ = std::fopen(path_.c_str(), "ab");
  check(f_ != nullptr, path_, ": cannot open for appending: ", std::strerror(errno));
}

MetricsLog::~MetricsLog() {
  if (f_ != nullptr) std::fclose(f_);
}

void MetricsLog::write_line(const std::string& line) {
  const bool ok = std::fwrite(line.data(), 1, line.size(), f_) == line.size() &&
                  std::fputc('\n', f_) != EOF && std::fflush(f_) == 0;
  check(ok, path_, ": write failed: ", std::strerror(errno));
}

void MetricsLog::step(const StepRecord& r, std::optional<double> mfu,
                      std::optional<double> comm_s) {
  json j;
  j["type"] = "step";
  j["step"] = r.step;
  j["loss"] = r.loss;  // non-finite values are written as null
  if (r.objective != r.loss) j["objective"] = r.objective;
  j["lr"] = r.lr;
  if (r.grad_norm) j["grad_norm"] = *r.grad_norm;
  j["tokens"] = r.tokens_seen;
  j["tok_per_s"] = r.step_s > 0 ? static_cast<double>(r.step_tokens) / r.step_s : 0.0;
  j["elapsed_s"] = r.elapsed_s;
  j["skipped"] = r.skipped;
  j["loss_scale"] = r.loss_scale;
  if (mfu) j["mfu"] = *mfu;
  if (comm_s) j["comm_s"] = *comm_s;
  write_line(j.dump());
}

void MetricsLog::eval(const EvalRecord& e) {
  json j;
  j["type"] = "eval";
  j["step"] = e.step;
  j["val_loss"] = e.val_loss;
  j["best_val_loss"] = e.best_val_loss;
  write_line(j.dump());
}

}  // namespace tinylm::train
