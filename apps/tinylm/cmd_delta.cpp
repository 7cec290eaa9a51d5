// tinylm delta export|apply: sparse updates of EvermindLM checkpoints. export keeps the rows
// whose largest change against a base checkpoint exceeds --eps; apply checks that the delta
// was made from this very base (by its CRC) and writes the updated checkpoint.
#include <cstdio>
#include <filesystem>

#include "cli_util.h"
#include "commands.h"
#include "tinylm/checkpoints/evl_checkpoint.h"
#include "tinylm/checkpoints/evl_delta.h"
#include "tinylm/core/error.h"
#include "tinylm/io/atomic_file.h"
#include "tinylm/io/output_target.h"

namespace tinylm::cli {

namespace {

// A delta changes weights, never the vocabulary: the base's tokenizer goes beside the written
// checkpoint, where generate, serve and train --init-from look for it (as checkpoints keep it).
// Not for a stream (/dev/stdout, a pipe): there is no file beside it.
void copy_tokenizer_beside(const std::string& base, const std::string& out) {
  if (io::output_mode(out) != io::OutputMode::replace) return;
  const std::string from = checkpoints::evl_tokenizer_path(base);
  if (!std::filesystem::is_regular_file(from)) {
    std::fprintf(stderr,
                 "warning: %s has no tokenizer beside it (%s); pass --tokenizer to use %s\n",
                 base.c_str(), from.c_str(), out.c_str());
    return;
  }
  io::copy_file_atomic(from, checkpoints::evl_tokenizer_path(out));
}

}  // namespace

void register_delta(CLI::App& app) {
  struct Flags {
    std::string base, model, delta, out, precision = "f32";
    float eps = 0.0f;
  };
  auto f = std::make_shared<Flags>();
  CLI::App* cmd = app.add_subcommand("delta", "Sparse deltas between EvermindLM checkpoints");
  cmd->require_subcommand(1);

  CLI::App* ex =
      cmd->add_subcommand("export", "Write the rows of --model that changed against --base");
  ex->add_option("--base", f->base, "The checkpoint the delta applies to")->required();
  ex->add_option("--model", f->model, "The updated checkpoint")->required();
  ex->add_option("--eps", f->eps,
                 "Keep rows whose largest |change| exceeds this (0: every changed row)")
      ->capture_default_str();
  ex->add_option("--out", f->out, "Delta file to write")->required();
  ex->callback([f] {
    check(f->eps >= 0.0f, "--eps must be non-negative");
    io::probe_output(f->out);
    const checkpoints::EvlCheckpoint base = checkpoints::load_evl(f->base);
    const checkpoints::EvlCheckpoint current = checkpoints::load_evl(f->model, base.config);
    const checkpoints::EvlDeltaSummary s =
        checkpoints::export_evl_delta(f->out, base, current.params, f->eps);
    std::fprintf(report_stream(f->out), "%s: %llu of %llu rows (%llu runs), %llu bytes\n",
                 f->out.c_str(), static_cast<unsigned long long>(s.rows_exported),
                 static_cast<unsigned long long>(s.rows_total),
                 static_cast<unsigned long long>(s.runs),
                 static_cast<unsigned long long>(s.file_bytes));
    std::error_code ec;
    const uint64_t model_bytes = std::filesystem::file_size(f->model, ec);
    if (!ec && s.file_bytes >= model_bytes) {
      std::fprintf(stderr,
                   "warning: the delta (%llu bytes, %llu of %llu rows kept at --eps %g) is not "
                   "smaller than the model (%llu bytes); ship the model, or raise --eps\n",
                   static_cast<unsigned long long>(s.file_bytes),
                   static_cast<unsigned long long>(s.rows_exported),
                   static_cast<unsigned long long>(s.rows_total), static_cast<double>(f->eps),
                   static_cast<unsigned long long>(model_bytes));
    }
  });

  CLI::App* ap =
      cmd->add_subcommand("apply", "Apply --delta to --base and write the updated checkpoint");
  ap->add_option("--base", f->base, "The checkpoint the delta was exported against")->required();
  ap->add_option("--delta", f->delta, "Delta file")->required();
  ap->add_option("--out", f->out, "Checkpoint to write")->required();
  ap->add_option("--precision", f->precision, "Weights of the written checkpoint: f32 or f16")
      ->capture_default_str();
  ap->callback([f] {
    std::error_code ec;
    const auto base_bytes = std::filesystem::file_size(f->base, ec);
    io::probe_output(f->out, ec ? 0 : base_bytes);
    const uint64_t rows = checkpoints::apply_evl_delta_to_file(
        f->base, f->delta, f->out, checkpoints::parse_evl_precision(f->precision));
    std::fprintf(report_stream(f->out), "%s: %llu rows applied\n", f->out.c_str(),
                 static_cast<unsigned long long>(rows));
    copy_tokenizer_beside(f->base, f->out);
  });
}

}  // namespace tinylm::cli
