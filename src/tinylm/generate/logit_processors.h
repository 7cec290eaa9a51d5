#pragma once
// The logit processing between a model's logits and the sampler, one place for the server and
// `tinylm generate`. Applied in this order to the last position's logits:
//   1. repetition: Hugging Face transformers' RepetitionPenaltyLogitsProcessor: every token seen
//      in the prompt or generated so far has a positive logit divided by `repetition`, a
//      negative one multiplied by it (in the logits' own precision, as torch does in float32);
//   2. frequency and presence, as OpenAI defines them:
//      logit[t] -= frequency * count(t) + presence * (count(t) > 0), count(t) the times t was
//      generated so far in this generation (the prompt does not count; no window);
//   3. bias: bias[t] added to logit[t] (OpenAI's logit_bias; -100 bans a token, +100 forces it).
// With every option at its neutral value the logits go to the sampler untouched (same bits).
#include <cstdint>
#include <span>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace tinylm::generate {

inline constexpr double kMaxPenalty = 2.0;      // |frequency|, |presence| (OpenAI's range)
inline constexpr double kMaxLogitBias = 100.0;  // |bias| (OpenAI's range)

struct LogitPenalties {
  double frequency = 0.0;                    // OpenAI frequency_penalty, in [-2, 2]
  double presence = 0.0;                     // OpenAI presence_penalty, in [-2, 2]
  double repetition = 1.0;                   // transformers' repetition_penalty, > 0 (1: none)
  std::vector<std::pair<int, double>> bias;  // (token id, added to its logit in [-100, 100])
  bool neutral() const {
    return frequency == 0.0 && presence == 0.0 && repetition == 1.0 && bias.empty();
  }
  // Throws Error naming the option that is out of range (a bias id outside [0, vocab_size)).
  void validate(int vocab_size) const;
};

// One generation's processing: what it has seen and generated, and the processed row.
template <class Logit>
class LogitProcessor {
 public:
  LogitProcessor(const LogitPenalties& penalties, std::span<const int> prompt);
  // The logits to sample from: `logits` itself when the options are neutral, else the processed
  // copy (valid until the next call).
  std::span<const Logit> apply(std::span<const Logit> logits);
  // Records a token drawn.
  void accept(int token);

 private:
  LogitPenalties penalties_;
  std::unordered_map<int, int64_t> generated_;  // token -> times generated (frequency, presence)
  std::unordered_set<int> seen_;                // prompt + generated (repetition)
  std::vector<Logit> row_;
};

}  // namespace tinylm::generate
