#pragma once
// Steps of whole documents, microgpt.py's way: step s trains document s mod n of the
// (already shuffled) training documents, encoded as BOS, its characters, BOS. The last
// `n_val` documents are held out; evaluation batch k is validation document k.
#include <span>
#include <string_view>
#include <vector>

#include "tinylm/tokenizers/char_tokenizer.h"
#include "tinylm/train/loop.h"

namespace tinylm::train {

class DocumentData final : public StepData {
 public:
  // `docs` must outlive this. eval_docs: how many validation documents to evaluate (at most
  // n_val).
  DocumentData(std::span<const std::string_view> docs, const CharTokenizer& tokenizer,
               int64_t n_val, int64_t eval_docs);

  Rows train_rows(int64_t step) override;
  int64_t micro_rows() const override { return 1; }
  int64_t eval_batches() const override { return eval_docs_; }
  Rows eval_rows(int64_t batch) override;

  int64_t train_docs() const { return static_cast<int64_t>(train_.size()); }

 private:
  Rows encode(std::string_view doc);

  std::span<const std::string_view> train_, val_;
  const CharTokenizer& tokenizer_;
  int64_t eval_docs_;
  std::vector<int32_t> buffer_;
};

}  // namespace tinylm::train
