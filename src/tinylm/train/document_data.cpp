#include "tinylm/train/document_data.h"

#include <algorithm>

#include "tinylm/core/error.h"

namespace tinylm::train {

DocumentData::DocumentData(std::span<const std::string_view> docs, const CharTokenizer& tokenizer,
                           int64_t n_val, int64_t eval_docs)
    : tokenizer_(tokenizer) {
  const int64_t n = static_cast<int64_t>(docs.size());
  check(n_val >= 0 && n_val < n, "the data holds ", n, " documents, too few to hold out ", n_val,
        " for validation and train on the rest");
  train_ = docs.first(static_cast<size_t>(n - n_val));
  val_ = docs.last(static_cast<size_t>(n_val));
  eval_docs_ = std::min(eval_docs, n_val);
}

Rows DocumentData::encode(std::string_view doc) {
  const std::vector<int> ids = tokenizer_.encode_document(doc);
  buffer_.assign(ids.begin(), ids.end());
  return {buffer_, 1, static_cast<int64_t>(buffer_.size())};
}

Rows DocumentData::train_rows(int64_t step) {
  return encode(train_[static_cast<size_t>(step % static_cast<int64_t>(train_.size()))]);
}

Rows DocumentData::eval_rows(int64_t batch) { return encode(val_[static_cast<size_t>(batch)]); }

}  // namespace tinylm::train
