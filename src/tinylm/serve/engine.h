#pragma once
// Continuous batching. One thread owns the model: between steps it admits queued choices into
// free slots and prefills their prompts together; each step then advances every active choice
// by one token in one forward over the batch (DecodeBackend::step reads the weights once for
// all of them). A choice's tokens are chosen by the generate loop's own step
// (generate::Generation: the family's sampler, the end-of-text rule, max_tokens), so they
// depend only on its prompt and its seed, and the backends' rows are the same bits alone or
// batched: a request's text is the same whatever runs beside it, and the same as
// `tinylm generate`'s. The server adds what only it has: stop texts, deadlines, logprobs.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "tinylm/generate/generate.h"
#include "tinylm/serve/metrics.h"
#include "tinylm/serve/request.h"
#include "tinylm/tokenizers/bpe.h"

namespace tinylm::serve {

using Clock = std::chrono::steady_clock;

struct TokenLogprob {
  int id = 0;
  double logprob = 0;
  std::vector<std::pair<int, double>> top;  // the most likely tokens, most likely first
};

// What a choice produced since it was last read.
struct Delta {
  std::string text;
  std::vector<TokenLogprob> logprobs;
  // Set once, on the last delta: "stop" or "length" ("error" if the model failed).
  std::string finish_reason;
  int completion_tokens = 0;  // so far
};

// Rung whenever one of a request's choices has news, so the writer of a many-choice response
// waits once for all of them instead of on each in turn. Waking a waiter costs a thread switch
// on each side, which the engine's threads pay on a small machine (docs/performance-history.md):
// rings closer than `gap` to the last wake-up are only counted, and the waiter finds them at the
// next wake-up or at the end of its wait. A choice's last news always wakes.
class Bell {
 public:
  // gap 0: every ring wakes; kEndsOnly (any gap below 0): only the last news of a choice.
  static constexpr std::chrono::milliseconds kEndsOnly{-1};
  explicit Bell(std::chrono::milliseconds gap = std::chrono::milliseconds(0)) : gap_(gap) {}
  // Returns whether it woke the waiters.
  bool ring(bool last);
  // Rings so far: read before taking news, then wait(seen) misses nothing taken after it.
  uint64_t rings();
  // Returns once the count differs from `seen`, or after `wait`.
  void wait(uint64_t seen, std::chrono::milliseconds wait);

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  uint64_t rings_ = 0;
  const std::chrono::milliseconds gap_;
  std::optional<Clock::time_point> woke_;  // the last wake-up (none: the first news wakes)
};

// One choice of a request, shared by the HTTP thread that reads it and the engine that
// writes it.
class Job {
 public:
  Job(Prompt p, const GenParams& g, Clock::time_point end,
      std::shared_ptr<Bell> bell = std::make_shared<Bell>())
      : prompt(std::move(p)), params(g), deadline(end), bell_(std::move(bell)) {}
  const Prompt prompt;
  const GenParams params;
  const Clock::time_point deadline;  // generation ends here (finish_reason "length")

  // Moves the news into `out` (appending text and logprobs) without waiting. Returns true once
  // the choice has finished and everything was read.
  bool take(Delta& out);
  // The bell this choice rings on news (shared by a request's choices).
  Bell& bell() { return *bell_; }
  // The client went away: the engine drops the choice at its next step.
  void cancel() { cancelled_ = true; }
  bool cancelled() const { return cancelled_; }

  // Engine side.
  void publish(std::string_view text, const TokenLogprob* lp, int completion_tokens,
               const std::string& finish_reason = {});

 private:
  std::mutex mu_;
  Delta pending_;
  bool finished_ = false, read_finish_ = false;
  std::atomic<bool> cancelled_{false};
  std::shared_ptr<Bell> bell_;
};

struct EngineOptions {
  int slots = 4;    // choices generated at once
  int queue = 64;   // choices waiting for a slot
  int eos_id = -1;  // a sampled eos ends a choice ("stop"); -1: none
  // false: no thread of its own; the loop runs in run(), on the caller's thread.
  bool own_thread = true;
  // Prompts admitted together are prefilled in one forward up to this many tokens (a longer
  // prompt alone).
  int prefill_rows = 512;
};

class Engine {
 public:
  Engine(generate::DecodeBackend& backend, const BpeTokenizer& tokenizer, EngineOptions options,
         Metrics& metrics);
  ~Engine();  // finishes what is queued and running, then stops the loop
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Queues all the choices of one request, or none: ApiError 429 when the queue lacks room
  // for them, 503 after close().
  void submit(std::span<const std::shared_ptr<Job>> jobs);
  // Stops accepting; what is queued or running still finishes.
  void close();
  // Blocks until nothing is queued or running.
  void wait_idle();

  // Without an own thread: runs the loop on the calling thread until stop(). A server runs it
  // on the thread that loaded the model, so the model's parallel regions all come from one
  // thread: libgomp spins between regions only while its threads do not outnumber the cores,
  // and a second thread starting regions made every region sleep and wake instead.
  void run();
  // Ends the loop once nothing is queued or running (as the destructor does).
  void stop();

 private:
  struct Slot;
  // A fresh slot's sequence and generation; false when the choice ended already (cancelled, past
  // its deadline, nothing to generate).
  bool start(Slot& slot);
  // Starts the admitted slots and prefills their prompts, then takes each one's first token.
  void prefill(std::span<Slot* const> fresh);
  // A row's next token (and its logprobs when asked for), or what stopped the sampler.
  struct Choice {
    int token = 0;
    std::optional<TokenLogprob> logprob;
    std::string error;  // the sampler's message when it failed
  };
  // Chooses each row's next token from its logits (rows.size() x vocab), then advances the
  // rows in order.
  void advance_all(std::span<Slot* const> rows, std::span<const float> logits);
  // Publishes the slot's chosen token, ending the choice when it is done.
  void advance(Slot& slot, Choice& choice);
  void finish(Slot& slot, std::string text, const TokenLogprob* lp, const std::string& reason);
  // A backend or sampler that throws (never for a checked request) ends the choice with reason
  // "error"; `why` is its message.
  void fail_slot(Slot& slot, const std::string& why);

  generate::DecodeBackend& backend_;
  const BpeTokenizer& tokenizer_;
  EngineOptions options_;
  Metrics& metrics_;
  std::vector<std::unique_ptr<Slot>> slots_;
  std::vector<float> logits_;
  std::vector<Choice> chosen_;  // advance_all's, one per row

  std::mutex mu_;
  std::condition_variable cv_, idle_cv_;
  std::deque<std::shared_ptr<Job>> queue_;
  int running_ = 0;  // slots in use
  bool closed_ = false, stopping_ = false;
  int threads_;  // the constructing thread's thread count, for the loop's thread
  std::thread thread_;
};

}  // namespace tinylm::serve
