#pragma once
// microgpt's character tokenizer: the sorted set of characters (code points) of the
// training documents are ids 0..n-1, and BOS = n marks both ends of a document.
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tinylm {

class CharTokenizer {
 public:
  // The sorted unique code points of all documents (UTF-8).
  static CharTokenizer from_documents(std::span<const std::string_view> docs);
  // From an explicit character set (UTF-8; sorted and deduplicated here).
  static CharTokenizer from_chars(std::string_view chars_utf8);

  int vocab_size() const { return static_cast<int>(chars_.size()) + 1; }
  int bos() const { return static_cast<int>(chars_.size()); }
  std::string chars_utf8() const;

  // [BOS] + ids + [BOS]; throws Error naming the first character outside the vocabulary.
  std::vector<int> encode_document(std::string_view doc) const;
  // UTF-8 text of ids (BOS is skipped).
  std::string decode(std::span<const int> ids) const;

 private:
  std::u32string chars_;  // sorted, unique
};

}  // namespace tinylm
