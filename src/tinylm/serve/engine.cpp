#include "tinylm/serve/engine.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <optional>

#include "tinylm/core/error.h"
#include "tinylm/core/parallel.h"
#include "tinylm/generate/stop_text.h"
#include "tinylm/kernels/reduce/log_sum_exp.h"
#include "tinylm/serve/api_error.h"

namespace tinylm::serve {

bool Bell::ring(bool last) {
  {
    std::lock_guard lock(mu_);
    ++rings_;
    const Clock::time_point now = Clock::now();
    if (!last && (gap_.count() < 0 || (woke_ && now - *woke_ < gap_))) return false;
    woke_ = now;
  }
  cv_.notify_all();
  return true;
}

uint64_t Bell::rings() {
  std::lock_guard lock(mu_);
  return rings_;
}

void Bell::wait(uint64_t seen, std::chrono::milliseconds wait) {
  std::unique_lock lock(mu_);
  cv_.wait_for(lock, wait, [&] { return rings_ != seen; });
}

bool Job::take(Delta& out) {
  std::lock_guard lock(mu_);
  out.text += pending_.text;
  for (TokenLogprob& lp : pending_.logprobs) out.logprobs.push_back(std::move(lp));
  out.completion_tokens = pending_.completion_tokens;
  pending_.text.clear();
  pending_.logprobs.clear();
  if (finished_) {
    out.finish_reason = pending_.finish_reason;
    read_finish_ = true;
  }
  return read_finish_;
}

void Job::publish(std::string_view text, const TokenLogprob* lp, int completion_tokens,
                  const std::string& finish_reason) {
  {
    std::lock_guard lock(mu_);
    pending_.text += text;
    if (lp) pending_.logprobs.push_back(*lp);
    pending_.completion_tokens = completion_tokens;
    if (!finish_reason.empty()) {
      pending_.finish_reason = finish_reason;
      finished_ = true;
    }
  }
  bell_->ring(!finish_reason.empty());
}

struct Engine::Slot {
  std::shared_ptr<Job> job;
  std::unique_ptr<generate::Sequence> seq;
  std::unique_ptr<generate::Sequence> spare;              // the last choice's, lent to the next
  std::optional<generate::Generation<float>> generation;  // its sampler and stop rules
  std::optional<StreamDecoder> text;
  generate::StopText stop;
  int next = 0;  // the token the next step feeds
  int generated() const { return generation ? generation->generated() : 0; }
};

Engine::Engine(generate::DecodeBackend& backend, const BpeTokenizer& tokenizer,
               EngineOptions options, Metrics& metrics)
    : backend_(backend), tokenizer_(tokenizer), options_(options), metrics_(metrics) {
  check(options_.slots >= 1 && options_.queue >= 0, "serve: slots must be >= 1, queue >= 0");
  for (int i = 0; i < options_.slots; ++i) slots_.push_back(std::make_unique<Slot>());
  logits_.resize(static_cast<size_t>(options_.slots) * backend_.vocab_size());
  // OpenMP's thread count is per thread: the engine's forwards use the caller's (--threads).
  threads_ = num_threads();
  if (options_.own_thread) thread_ = std::thread([this] { run(); });
}

Engine::~Engine() {
  stop();
  if (thread_.joinable()) thread_.join();
}

void Engine::stop() {
  {
    std::lock_guard lock(mu_);
    closed_ = stopping_ = true;
  }
  cv_.notify_all();
}

void Engine::submit(std::span<const std::shared_ptr<Job>> jobs) {
  {
    std::lock_guard lock(mu_);
    if (closed_) throw ApiError(503, "server_error", "the server is shutting down");
    const size_t room = static_cast<size_t>(options_.queue) + (options_.slots - running_);
    if (queue_.size() + jobs.size() > room) {
      throw ApiError(429, "rate_limit_error",
                     cat("the server is busy: ", running_, " generations running and ",
                         queue_.size(), " waiting (--slots ", options_.slots, ", --queue ",
                         options_.queue, "); retry later"));
    }
    queue_.insert(queue_.end(), jobs.begin(), jobs.end());
    metrics_.set_queue(static_cast<int>(queue_.size()));
  }
  cv_.notify_all();
}

void Engine::close() {
  std::lock_guard lock(mu_);
  closed_ = true;
}

void Engine::wait_idle() {
  std::unique_lock lock(mu_);
  idle_cv_.wait(lock, [&] { return queue_.empty() && running_ == 0; });
}

void Engine::run() {
  set_num_threads(threads_);
  std::vector<Slot*> fresh, batch;
  std::vector<generate::Sequence*> seqs;
  std::vector<int> tokens;
  for (;;) {
    fresh.clear();
    {
      std::unique_lock lock(mu_);
      if (queue_.empty() && running_ == 0) {
        idle_cv_.notify_all();
        if (stopping_) return;
        cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
        continue;
      }
      // Admit waiting choices into free slots, in arrival order.
      for (auto& slot : slots_) {
        if (queue_.empty()) break;
        if (slot->job) continue;
        slot->job = std::move(queue_.front());
        queue_.pop_front();
        ++running_;
        fresh.push_back(slot.get());
      }
      metrics_.set_queue(static_cast<int>(queue_.size()));
      metrics_.set_active(running_);
    }
    prefill(fresh);
    // One step for every running choice that is still wanted.
    batch.clear();
    seqs.clear();
    tokens.clear();
    for (auto& slot : slots_) {
      if (!slot->job || !slot->seq) continue;
      if (slot->job->cancelled()) {
        finish(*slot, {}, nullptr, "cancelled");
        continue;
      }
      batch.push_back(slot.get());
      seqs.push_back(slot->seq.get());
      tokens.push_back(slot->next);
    }
    if (batch.empty()) continue;
    const size_t V = static_cast<size_t>(backend_.vocab_size());
    try {
      backend_.step(seqs, tokens, std::span(logits_).first(batch.size() * V));
    } catch (const std::exception& e) {
      for (Slot* s : batch) fail_slot(*s, e.what());
      continue;
    }
    advance_all(batch, logits_);
    metrics_.count_generated(static_cast<int64_t>(batch.size()));
  }
}

bool Engine::start(Slot& slot) {
  const Job& job = *slot.job;
  if (job.params.echo) slot.job->publish(job.prompt.text, nullptr, 0);
  if (job.cancelled() || job.prompt.max_tokens == 0 || Clock::now() >= job.deadline) {
    finish(slot, {}, nullptr, job.cancelled() ? "cancelled" : "length");
    return false;
  }
  const int n = static_cast<int>(job.prompt.ids.size());
  const int limit = backend_.context_limit();
  slot.seq =
      backend_.start(limit ? std::min(limit, n + job.prompt.max_tokens) : 0, std::move(slot.spare));
  generate::GenerateOptions options;
  options.max_tokens = job.prompt.max_tokens;
  options.sampling = job.params.sampling;
  options.penalties = job.params.penalties;
  options.eos_id = options_.eos_id;
  options.ignore_eos = job.params.ignore_eos;
  slot.generation.emplace(backend_, options, job.prompt.ids);
  slot.text.emplace(tokenizer_);
  slot.stop = generate::StopText(job.params.stop);
  return true;
}

void Engine::prefill(std::span<Slot* const> fresh) {
  // The admitted prompts in groups of up to options_.prefill_rows tokens, each group one
  // forward over all its rows: the weights are read once for the group.
  if (fresh.empty()) return;  // (most steps)
  const size_t limit = static_cast<size_t>(options_.prefill_rows);
  std::vector<Slot*> group;
  std::vector<generate::Sequence*> seqs;
  std::vector<std::span<const int>> prompts;
  size_t rows = 0;
  const auto run_group = [&] {
    const size_t V = static_cast<size_t>(backend_.vocab_size());
    const std::span<float> logits = std::span(logits_).first(group.size() * V);
    bool ok = !group.empty();
    try {
      if (ok) backend_.prefill_many(seqs, prompts, logits);
    } catch (const std::exception& e) {  // requests are checked first: this is a bug
      for (Slot* s : group) fail_slot(*s, e.what());
      ok = false;
    }
    if (ok) {
      for (size_t i = 0; i < group.size(); ++i)
        metrics_.count_prompt_tokens(static_cast<int64_t>(prompts[i].size()));
      metrics_.count_generated(static_cast<int64_t>(group.size()));
      advance_all(group, logits);
    }
    group.clear();
    seqs.clear();
    prompts.clear();
    rows = 0;
  };
  for (Slot* s : fresh) {
    try {
      if (!start(*s)) continue;
    } catch (const std::exception& e) {
      fail_slot(*s, e.what());
      continue;
    }
    const std::span<const int> ids = s->job->prompt.ids;
    if (!group.empty() && rows + ids.size() > limit) run_group();
    group.push_back(s);
    seqs.push_back(s->seq.get());
    prompts.push_back(ids);
    rows += ids.size();
  }
  run_group();
}

namespace {

TokenLogprob logprob_of(std::span<const float> logits, int id, int alternatives) {
  const double log_z = kernels::log_sum_exp(logits.data(), static_cast<int64_t>(logits.size()));
  TokenLogprob lp;
  lp.id = id;
  lp.logprob = logits[id] - log_z;
  if (alternatives > 0) {
    std::vector<int> order(logits.size());
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + alternatives, order.end(), [&](int a, int b) {
      return logits[a] != logits[b] ? logits[a] > logits[b] : a < b;
    });
    for (int i = 0; i < alternatives; ++i) lp.top.emplace_back(order[i], logits[order[i]] - log_z);
  }
  return lp;
}

}  // namespace

void Engine::advance_all(std::span<Slot* const> rows, std::span<const float> logits) {
  // The choices in parallel: each reads only its row of logits and its own sampler, so the
  // tokens are the same whichever thread took them (sampling at a temperature takes a large
  // part of a millisecond a row, as much as the batch's forward at 32 streams).
  const size_t V = static_cast<size_t>(backend_.vocab_size());
  chosen_.resize(rows.size());
  parallel_for(0, static_cast<int64_t>(rows.size()), 1, [&](int64_t r) {
    Choice& c = chosen_[r];
    const Job& job = *rows[r]->job;
    const std::span<const float> row = logits.subspan(r * V, V);
    c = Choice{};
    try {
      c.token = rows[r]->generation->choose(row);
      if (job.params.logprobs >= 0) c.logprob = logprob_of(row, c.token, job.params.logprobs);
    } catch (const std::exception& e) {  // (no finite logits; not to leave a parallel region)
      c.error = e.what();
    }
  });
  for (size_t r = 0; r < rows.size(); ++r) {
    if (chosen_[r].error.empty())
      advance(*rows[r], chosen_[r]);
    else
      fail_slot(*rows[r], chosen_[r].error);
  }
}

void Engine::advance(Slot& slot, Choice& choice) {
  const Job& job = *slot.job;
  const int token = choice.token;
  std::optional<TokenLogprob>& lp = choice.logprob;
  const generate::Stop rule = slot.generation->stop();
  if (rule == generate::Stop::end_of_text) {
    std::string rest = slot.stop.push(slot.text->finish());
    finish(slot, rest + slot.stop.finish(), nullptr, "stop");
    return;
  }
  std::string out = slot.stop.push(slot.text->push(token));
  if (slot.stop.stopped()) {
    finish(slot, std::move(out), lp ? &*lp : nullptr, "stop");
    return;
  }
  if (rule != generate::Stop::none || Clock::now() >= job.deadline) {
    out += slot.stop.push(slot.text->finish());
    const bool stopped = slot.stop.stopped();
    out += slot.stop.finish();
    finish(slot, std::move(out), lp ? &*lp : nullptr, stopped ? "stop" : "length");
    return;
  }
  slot.next = token;
  slot.job->publish(out, lp ? &*lp : nullptr, slot.generated());
}

void Engine::fail_slot(Slot& slot, const std::string& why) {
  std::fprintf(stderr, "tinylm serve: a generation failed: %s\n", why.c_str());
  finish(slot, {}, nullptr, "error");
}

void Engine::finish(Slot& slot, std::string text, const TokenLogprob* lp,
                    const std::string& reason) {
  slot.job->publish(text, lp, slot.generated(), reason);
  if (slot.seq) slot.spare = std::move(slot.seq);
  slot.generation.reset();
  slot.text.reset();
  {
    std::lock_guard lock(mu_);
    slot.job.reset();
    --running_;
    metrics_.set_active(running_);
  }
  // Counted after the slot is free, so one who sees the count also sees the slot released.
  if (reason == "cancelled") metrics_.count_cancelled();
}

}  // namespace tinylm::serve
