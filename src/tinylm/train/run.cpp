#include "tinylm/train/run.h"

#include <cmath>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <map>

#include "tinylm/core/error.h"
#include "tinylm/core/parallel.h"
#include "tinylm/core/timer.h"
#include "tinylm/distributed/comm.h"
#include "tinylm/io/atomic_file.h"
#include "tinylm/io/file_crc.h"
#include "tinylm/io/text_file.h"
#include "tinylm/train/disk_space.h"
#include "tinylm/train/family.h"
#include "tinylm/train/metrics_log.h"
#include "tinylm/train/progress.h"
#include "tinylm/train/run_lock.h"
#include "tinylm/train/run_session.h"
#include "tinylm/train/token_file.h"

namespace tinylm::train {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

namespace {

LoopOptions loop_options(const RunConfig& c) {
  LoopOptions o;
  o.steps = c.steps;
  o.lr = {c.lr, c.min_lr, c.warmup, c.steps, optim::parse_lr_decay(c.schedule)};
  o.optimizer = parse_optimizer(c.optimizer);
  o.adam = {c.beta1, c.beta2, c.eps, c.weight_decay};
  o.decay = parse_decay_scope(c.decay);
  o.clip = c.clip;
  o.loss_scaling = c.compute == "f16" || c.mixed_precision;
  o.eval_every = c.eval_every;
  o.save_every = c.save_every;
  o.max_bad_steps = c.max_bad_steps;
  o.seed = c.seed;
  return o;
}

template <class T>
TrainState<T> train_state(const std::string& arch, const LoopState& l, const RunConfig& config,
                          std::map<std::string, uint32_t> files) {
  TrainState<T> s;
  s.arch = arch;
  s.loop = l;
  s.shards = run_shards(config);
  s.config = to_json(config);
  s.files = std::move(files);
  return s;
}

// The CRC-32 of every file in a checkpoint's directory, by name: recorded in its state, which
// is written last, so that resume finds weights that changed or belong to another step.
std::map<std::string, uint32_t> file_crcs(const std::string& dir) {
  std::map<std::string, uint32_t> crcs;
  std::error_code ec;
  for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator();
       it.increment(ec)) {
    if (it->is_regular_file(ec)) crcs[it->path().filename().string()] = io::file_crc32(it->path());
  }
  check(!ec, dir, ": cannot list: ", ec.message());
  return crcs;
}

// The checkpoint's files against the CRCs its state recorded; a state written before they
// were recorded is accepted with a note.
void verify_checkpoint_files(const std::string& dir, const std::string& state_path,
                             const std::optional<std::map<std::string, uint32_t>>& files,
                             std::FILE* log) {
  if (!files) {
    std::fprintf(log,
                 "note: %s records no checksums of its files (written by an older tinylm): "
                 "they are not verified\n",
                 state_path.c_str());
    return;
  }
  for (const auto& [name, crc] : *files) {
    const std::string path = dir + "/" + name;
    std::error_code ec;
    check(fs::is_regular_file(path, ec), path, ": missing from the checkpoint (", state_path,
          " records it)");
    check(io::file_crc32(path) == crc, path, ": checksum mismatch: the file changed after ",
          state_path, " was written (corrupt, or from another checkpoint)");
  }
}

template <class T>
bool all_finite(std::span<const T> x) {
  for (const T v : x) {
    if (!std::isfinite(v)) return false;
  }
  return true;
}

// An explicit --threads must be 1..max_threads(); only the default (not given) means all
// cores, so --threads 0 is refused rather than silently read as "all".
void check_given_threads(const json& given) {
  const auto it = given.find("threads");
  if (it == given.end() || !it->is_number_integer()) return;
  try {
    check_threads(it->get<int64_t>());
  } catch (const Error& e) {
    throw FlagError(e.what());
  }
}

// The configuration of a fresh run: the architecture's defaults, then the given flags.
RunConfig fresh_config(const TrainFamilies& families, const json& given) {
  if (!given.contains("arch") || !given["arch"].is_string()) throw FlagError("--arch is required");
  RunConfig c = defaults_for(families, given["arch"].get<std::string>());
  merge_json(c, given, "the command line");
  const TrainFamily& family = families.find(c.arch);
  families.check_flags(c.arch, given);
  if (family.complete) family.complete(c, given, false);
  check_given_threads(given);
  validate(families, c);
  return c;
}

// The stored configuration of a resumed run, with the cadence flags given now.
RunConfig resumed_config(const TrainFamilies& families, const RunDir& dir, const json& given) {
  const std::string path = dir.run_json();
  const json stored = json::parse(io::read_file(path), nullptr, /*allow_exceptions=*/false);
  check(stored.is_object() && stored.contains("arch") && stored["arch"].is_string(), path,
        ": not a run configuration (invalid JSON or no \"arch\")");
  RunConfig c = defaults_for(families, stored["arch"].get<std::string>());
  merge_json(c, stored, path);
  const TrainFamily& family = families.find(c.arch);
  if (family.complete) family.complete(c, stored, true);
  families.check_flags(c.arch, given);
  check_resume_flags(c, given);
  merge_json(c, given, "the command line");
  check_given_threads(given);
  validate(families, c);
  return c;
}

// Test hook: TINYLM_TEST_CRASH=<point>:<step> kills the process with SIGKILL when the run
// reaches that point of that step (step: after the step's metrics line; model, state,
// publish, latest: during its checkpoint, after that part is written), so the tests can
// check that a run killed anywhere resumes exactly.
void crash_point(const char* point, int64_t step) {
  static const std::string target = [] {
    const char* v = std::getenv("TINYLM_TEST_CRASH");
    return std::string(v != nullptr ? v : "");
  }();
  if (!target.empty() && target == std::string(point) + ":" + std::to_string(step)) {
    std::fflush(nullptr);
    std::raise(SIGKILL);
  }
}

// --out's directory: new, empty (but for a lock file), or a run that stopped before its first
// checkpoint (nothing to keep: it starts over). Writes nothing.
void check_new_run_dir(const std::string& path) {
  if (RunDir::looks_like_run(path)) {
    check(RunDir(path).checkpoints().empty(), path,
          ": already holds a training run; continue it with --resume ", path,
          ", or choose another --out");
    return;
  }
  std::error_code ec;
  if (!fs::exists(path, ec)) return;
  check(fs::is_directory(path, ec), path, ": exists and is not a directory");
  for (auto it = fs::directory_iterator(path, ec); !ec && it != fs::directory_iterator();
       it.increment(ec)) {
    check(it->path().filename() == RunLock::kFileName, path,
          ": exists and is not empty; --out must be a new or empty directory");
  }
  check(!ec, path, ": cannot list: ", ec.message());
}

void write_json(const std::string& path, const json& j) {
  const std::string text = j.dump(2) + "\n";
  io::write_file_atomic(path, std::as_bytes(std::span<const char>(text)));
}

}  // namespace

std::vector<std::string> data_files(const RunConfig& config) {
  return expand_data_paths(config.data);
}

TextData::TextData(const RunConfig& c, const RunDir& dir, const TokenizerIdentity& identity,
                   const Encoder& encoder, std::FILE* log)
    : tokens(root_first([&] {
        // Only the first process writes it; the others read what it wrote.
        TokenFileBuild built = build_or_reuse_token_file(
            dir.tokens_bin(), data_files(c), identity, encoder, distributed::Comm::world().root());
        if (!built.rebuilt_because.empty()) {
          std::fprintf(log, "%s: rebuilt from the data (the old one: %s)\n",
                       dir.tokens_bin().c_str(), built.rebuilt_because.c_str());
        }
        return built;
      })),
      sampler(split_tokens(tokens.file.size(), c.val_fraction, c.seq_len), c.batch, c.seq_len,
              c.accum, c.seed, parse_data_order(c.order)),
      data(tokens.file, sampler, c.batch, c.accum, c.eval_batches) {}

template <class T>
RunSummary drive(const RunConfig& config, RunDir& dir, const RunRequest& request,
                 Session<T> session, std::optional<TrainState<T>> resumed) {
  TrainLoop<T> loop(session.model, session.data, loop_options(config));
  if (resumed) {
    loop.restore(resumed->loop, resumed->m, resumed->v);
  }
  const double flops = session.model.flops_per_token();
  distributed::Comm& comm = distributed::Comm::world();
  std::optional<MetricsLog> metrics;  // written by the first process only
  if (comm.root()) {
    metrics.emplace(dir.metrics_jsonl(),
                    resumed ? std::optional<int64_t>(resumed->loop.step) : std::nullopt);
  }
  Progress progress(request.log, request.terminal, config.steps, config.log_every);
  RunSummary summary;
  LoopHooks hooks;
  // Every process stops at the same step: a stop seen by any of them (Ctrl-C reaches all
  // through mpirun, but not necessarily between the same two steps) stops all.
  hooks.should_stop = [&] {
    const double mine = request.should_stop && request.should_stop() ? 1.0 : 0.0;
    if (comm.size() == 1) return mine > 0;
    for (const double v : comm.all_gather(std::span(&mine, 1)))
      if (v > 0) return true;
    return false;
  };
  hooks.on_step = [&](const StepRecord& r) {
    std::optional<double> mfu;
    if (request.peak_flops > 0 && flops > 0 && r.step_s > 0) {
      mfu = flops * static_cast<double>(r.step_tokens) / r.step_s / request.peak_flops;
    }
    const double comm_s = comm.take_comm_seconds();
    if (metrics) {
      metrics->step(r, mfu, comm.size() > 1 ? std::optional<double>(comm_s) : std::nullopt);
    }
    progress.step(r, mfu);
    if (session.sample && config.sample_every > 0 && comm.root() &&
        (r.step % config.sample_every == 0 || r.step == config.steps)) {
      loop.params_to_host();
      progress.note(cat("sample at step ", r.step, ":", session.sample(config.seed + r.step)));
    }
    summary.last_loss = r.loss;
    crash_point("step", r.step);
  };
  hooks.on_eval = [&](const EvalRecord& e) {
    if (metrics) metrics->eval(e);
    progress.eval(e);
  };
  hooks.on_checkpoint = [&](int64_t step) {
    if (!comm.root()) return;  // the same weights everywhere: the first process writes them
    const Timer timer;
    check(all_finite(std::span<const T>(session.model.params())), "step ", step,
          ": the parameters are not finite; no checkpoint written (the last one, ",
          summary.checkpoint.empty() ? std::string("none") : summary.checkpoint, ", stands)");
    const std::string tmp = dir.begin_checkpoint(step);
    session.save_model(tmp);
    crash_point("model", step);
    save_train_state(tmp + "/train_state.bin",
                     train_state<T>(config.arch, loop.state(), config, file_crcs(tmp)),
                     loop.first_moment(), loop.second_moment());
    crash_point("state", step);
    summary.checkpoint = dir.publish_checkpoint(step);
    crash_point("publish", step);
    dir.point_latest(step);
    crash_point("latest", step);
    dir.prune(step, static_cast<int>(config.keep));
    char line[512];
    std::snprintf(line, sizeof line, "checkpoint %s written in %.1f s", summary.checkpoint.c_str(),
                  timer.elapsed_ms() / 1e3);
    progress.note(line);
  };
  loop.run(hooks);
  progress.finish();
  summary.steps = loop.state().step;
  summary.best_val_loss = loop.state().best_val_loss;
  summary.stopped = summary.steps < config.steps;
  return summary;
}

template <class T>
std::optional<TrainState<T>> resume_state(const RunConfig& config,
                                          const std::optional<Checkpoint>& resume, std::FILE* log) {
  if (!resume) return std::nullopt;
  const std::string path = resume->path + "/train_state.bin";
  TrainState<T> s = load_train_state<T>(path);
  check(s.loop.step == resume->step, path, ": the training state of step ", s.loop.step,
        ", in the checkpoint of step ", resume->step, " (copied from another checkpoint?)");
  verify_checkpoint_files(resume->path, path, s.files, log);
  check(s.arch == config.arch, path, ": the training state of an --arch ", s.arch,
        " run, but the run's configuration says ", config.arch);
  const int64_t processes = distributed::Comm::world().size(), shards = run_shards(config);
  check(s.shards == shards, path, ": the run trained on ", s.shards, " shards; ", processes,
        " process(es) x --devices ", config.devices, " make ", shards,
        " (keep processes x --devices at ", s.shards, " to resume exactly)");
  return s;
}

template std::optional<TrainState<float>> resume_state(const RunConfig&,
                                                       const std::optional<Checkpoint>&,
                                                       std::FILE*);
template std::optional<TrainState<double>> resume_state(const RunConfig&,
                                                        const std::optional<Checkpoint>&,
                                                        std::FILE*);

template RunSummary drive<float>(const RunConfig&, RunDir&, const RunRequest&, Session<float>,
                                 std::optional<TrainState<float>>);
template RunSummary drive<double>(const RunConfig&, RunDir&, const RunRequest&, Session<double>,
                                  std::optional<TrainState<double>>);

namespace {

// A resume of a run already at its --steps would train nothing: say so, and how to go on
// (--steps may change on resume; the schedule then stretches to the new end).
void check_not_finished(const std::string& dir, int64_t step, int64_t steps, const json& given) {
  if (step < steps) return;
  if (given.contains("steps"))
    throw Error(cat(dir, ": at step ", step, ", and --steps ", steps,
                    " trains no further; give --steps above ", step));
  throw Error(cat(dir, ": finished at step ", step, " of ", steps,
                  "; to train further: tinylm train --resume ", dir, " --steps M (M > ", step,
                  ")"));
}

}  // namespace

RunSummary run_training(const TrainFamilies& families, const RunRequest& given_request) {
  distributed::Comm& comm = distributed::Comm::world();
  RunRequest request = given_request;
  if (!comm.root()) {  // under mpirun the first process reports; the others stay quiet
    static std::FILE* const quiet = std::fopen("/dev/null", "w");
    check(quiet != nullptr, "/dev/null: cannot open");
    request.log = quiet;
    request.terminal = false;
  }
  check(!request.dir.empty(), "no run directory given (--out DIR, or --resume DIR)");
  // The first process checks and prepares the run directory; the others follow once it has.
  if (!comm.root()) comm.barrier();
  // A run another process is training is refused first, naming it, whatever else is wrong.
  if (comm.root()) RunLock::check_free(request.dir);
  RunConfig config;
  std::optional<Checkpoint> resume;
  if (request.resume) {
    check(RunDir::looks_like_run(request.dir), request.dir,
          ": not a training run (no run.json); start one with --out");
    RunDir probe(request.dir);
    config = resumed_config(families, probe, request.given);
  } else {
    config = fresh_config(families, request.given);
    if (comm.root()) check_new_run_dir(request.dir);
  }
  const TrainFamily& family = families.find(config.arch);
  const int64_t shards = run_shards(config);
  if (config.batch % shards != 0) {
    throw FlagError(cat("--batch ", config.batch, " does not split into ", shards, " shards (",
                        comm.size(), " process(es) x --devices ", config.devices, ")"));
  }
  // A disk too small for the checkpoints is found now, not at the first of them.
  if (comm.root()) {
    const std::vector<Checkpoint> existing =
        request.resume ? RunDir(request.dir).checkpoints() : std::vector<Checkpoint>();
    check_disk_space(request.dir, estimate_disk_need(family, config, existing),
                     available_bytes(request.dir));
    // And a GPU too small for the model and the batch.
    if (family.check_device) family.check_device(config);
  }
  // Only the first process writes the run directory, so only it holds the lock: from here,
  // before its first write, until run_training returns.
  std::optional<RunLock> lock;
  // The others never create it: on a filesystem they do not share, they would train alone.
  check(comm.root() || fs::is_directory(request.dir), request.dir,
        ": the run directory is missing on this process's machine (every process must see it)");
  RunDir dir(request.dir);
  if (comm.root()) {
    lock.emplace(RunLock::acquire(dir.root()));
    // Again under the lock: another process may have started the run since the check above.
    if (!request.resume) check_new_run_dir(request.dir);
    dir.remove_stale_temporaries();
  }
  if (request.resume) {
    const std::vector<Checkpoint> all = dir.checkpoints();
    check(!all.empty(), request.dir, ": no checkpoint to resume from (the run stopped before ",
          "its first one; start it again)");
    resume = all.back();
    check_not_finished(request.dir, resume->step, config.steps, request.given);
  } else if (comm.root()) {
    fs::remove(dir.metrics_jsonl());
    write_json(dir.run_json(), to_json(config));
  }
  if (comm.root()) comm.barrier();
  set_num_threads(static_cast<int>(config.threads));
  return family.run(config, dir, request, resume);
}

}  // namespace tinylm::train
