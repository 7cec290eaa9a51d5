#include "tinylm/tokenizers/bpe_trainer.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <unordered_map>
#include <unordered_set>

#include "tinylm/core/error.h"
#include "tinylm/core/utf8.h"
#include "tinylm/tokenizers/bpe_tables.h"
#include "tinylm/tokenizers/pretokenize.h"

namespace tinylm {

namespace {

constexpr int kBytes = 256;

// A token's bytes written in the byte-level alphabet (the form tokenizer.json stores).
std::string byte_level(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (const char c : bytes) append_utf8(out, byte_to_unicode(static_cast<uint8_t>(c)));
  return out;
}

// The bytes whose byte-level form is `text`, or false when a character of text is outside the
// byte-level alphabet (text is valid UTF-8).
bool from_byte_level(std::string_view text, std::string& bytes) {
  bytes.clear();
  for (size_t i = 0; i < text.size();) {
    int len = 0;
    const int b = unicode_to_byte(utf8_at(text, i, &len));
    if (b < 0) return false;
    bytes += static_cast<char>(b);
    i += static_cast<size_t>(len);
  }
  return true;
}

void check_special_tokens(std::span<const std::string> specials) {
  std::unordered_set<std::string_view> seen;
  for (size_t i = 0; i < specials.size(); ++i) {
    const std::string& s = specials[i];
    check(!s.empty(), "BPE trainer: special token ", i, " is empty");
    size_t bad = 0;
    check(is_valid_utf8(s, &bad), "BPE trainer: special token ", i, " is not valid UTF-8 (byte ",
          bad, ")");
    check(seen.insert(s).second, "BPE trainer: special token '", s, "' is given twice");
    std::string bytes;
    check(!(from_byte_level(s, bytes) && bytes.size() == 1), "BPE trainer: special token '", s,
          "' is the byte-level character of a byte, which is already a token");
  }
}

void check_config(const BpeTrainConfig& config) {
  check(config.vocab_size >= kBytes + static_cast<int64_t>(config.special_tokens.size()),
        "BPE trainer: vocab_size ", config.vocab_size, " is below 256 bytes + ",
        config.special_tokens.size(), " special tokens = ", kBytes + config.special_tokens.size());
  check_special_tokens(config.special_tokens);
}

// Calls f(part) for the text between the special tokens, found leftmost first and the longest
// there (BpeTokenizer::encode's rule with allow_special).
template <class F>
void for_each_between_specials(std::string_view text, std::span<const std::string> specials,
                               F&& f) {
  std::vector<size_t> next(specials.size());
  for (size_t k = 0; k < specials.size(); ++k) next[k] = text.find(specials[k]);
  size_t pos = 0;
  while (true) {
    size_t best = std::string_view::npos, best_k = 0;
    for (size_t k = 0; k < specials.size(); ++k) {
      if (next[k] != std::string_view::npos && next[k] < pos) next[k] = text.find(specials[k], pos);
      if (next[k] < best || (next[k] == best && best != std::string_view::npos &&
                             specials[k].size() > specials[best_k].size())) {
        best = next[k];
        best_k = k;
      }
    }
    if (best == std::string_view::npos) break;
    f(text.substr(pos, best - pos));
    pos = best + specials[best_k].size();
  }
  f(text.substr(pos));
}

using bpe_detail::pair_key;
int key_first(uint64_t key) { return static_cast<int>(key >> 32); }
int key_second(uint64_t key) { return static_cast<int>(key & 0xFFFFFFFFu); }

struct Word {
  std::vector<int> symbols;
  int64_t count;
};

struct HeapEntry {
  int64_t count;
  int a, b;
};

class Trainer {
 public:
  Trainer(std::span<const BpeWordCount> words, const BpeTrainConfig& config) : config_(config) {
    check_config(config);
    for (const std::string& s : config.special_tokens) {
      std::string bytes;
      if (from_byte_level(s, bytes)) taken_.insert(std::move(bytes));
    }
    size_t corpus_bytes = 0;  // each merge shortens some word: at most this many merges
    words_.reserve(words.size());
    for (const BpeWordCount& w : words) {
      corpus_bytes += w.word.size();
      check(!w.word.empty() && w.count > 0,
            "BPE trainer: words must be non-empty with a positive count");
      Word& word = words_.emplace_back();
      word.count = w.count;
      word.symbols.reserve(w.word.size());
      for (const char c : w.word) word.symbols.push_back(static_cast<uint8_t>(c));
    }
    symbol_bytes_.reserve(kBytes + std::min(corpus_bytes, static_cast<size_t>(config.vocab_size)));
    for (int b = 0; b < kBytes; ++b) {
      symbol_bytes_.emplace_back(1, static_cast<char>(b));
      taken_.insert(symbol_bytes_.back());
    }
  }

  BpeTrainResult run() {
    count_pairs();
    const size_t target =
        static_cast<size_t>(config_.vocab_size) - kBytes - config_.special_tokens.size();
    BpeTrainResult out;
    while (out.merges.size() < target && !heap_.empty()) {
      std::pop_heap(heap_.begin(), heap_.end(), worse_);
      const HeapEntry e = heap_.back();
      heap_.pop_back();
      const uint64_t key = pair_key(e.a, e.b);
      const auto it = pair_counts_.find(key);
      const int64_t now = it == pair_counts_.end() ? 0 : it->second;
      if (now != e.count) {  // stale: the count has only fallen since the push
        if (now > 0) push(now, e.a, e.b);
        continue;
      }
      std::string merged = symbol_bytes_[e.a] + symbol_bytes_[e.b];
      if (!taken_.insert(merged).second) continue;  // rule 3: refused for good
      const int z = static_cast<int>(symbol_bytes_.size());
      symbol_bytes_.push_back(std::move(merged));
      out.merges.emplace_back(e.a, e.b);
      merge(key, e.a, e.b, z);
    }
    out.token_bytes = std::move(symbol_bytes_);
    for (const std::string& s : config_.special_tokens) out.token_bytes.push_back(s);
    out.special_tokens = config_.special_tokens;
    return out;
  }

 private:
  // The heap order: an entry is worse when its count is lower, or, at equal counts, when its
  // (bytes(a), bytes(b)) is larger.
  struct Worse {
    const std::vector<std::string>* bytes;
    bool operator()(const HeapEntry& x, const HeapEntry& y) const {
      if (x.count != y.count) return x.count < y.count;
      const std::string& xa = (*bytes)[static_cast<size_t>(x.a)];
      const std::string& ya = (*bytes)[static_cast<size_t>(y.a)];
      if (xa != ya) return xa > ya;  // std::string compares bytes as unsigned char
      return (*bytes)[static_cast<size_t>(x.b)] > (*bytes)[static_cast<size_t>(y.b)];
    }
  };

  void push(int64_t count, int a, int b) {
    heap_.push_back({count, a, b});
    std::push_heap(heap_.begin(), heap_.end(), worse_);
  }

  void count_pairs() {
    for (size_t w = 0; w < words_.size(); ++w) {
      const Word& word = words_[w];
      for (size_t i = 0; i + 1 < word.symbols.size(); ++i) {
        const uint64_t key = pair_key(word.symbols[i], word.symbols[i + 1]);
        pair_counts_[key] += word.count;
        std::vector<int>& holders = pair_words_[key];
        if (holders.empty() || holders.back() != static_cast<int>(w)) {
          holders.push_back(static_cast<int>(w));
        }
      }
    }
    heap_.reserve(pair_counts_.size() * 2);
    for (const auto& [key, count] : pair_counts_) {
      heap_.push_back({count, key_first(key), key_second(key)});
    }
    std::make_heap(heap_.begin(), heap_.end(), worse_);
  }

  // Replaces (a, b) by z in every word that holds it and updates the pair counts: the word's
  // old pairs are taken out and its new ones put in. Only pairs with z are new; every other
  // pair's count can only fall, which is what lets the heap keep stale entries.
  void merge(uint64_t key, int a, int b, int z) {
    const auto holders_it = pair_words_.find(key);
    std::vector<int> holders = std::move(holders_it->second);
    pair_words_.erase(holders_it);
    new_pairs_.clear();
    for (const int w : holders) {
      Word& word = words_[static_cast<size_t>(w)];
      std::vector<int>& s = word.symbols;
      bool found = false;
      for (size_t i = 0; i + 1 < s.size() && !found; ++i) found = s[i] == a && s[i + 1] == b;
      if (!found) continue;  // an earlier merge took the occurrences away
      for (size_t i = 0; i + 1 < s.size(); ++i) {
        pair_counts_[pair_key(s[i], s[i + 1])] -= word.count;
      }
      size_t n = 0;
      for (size_t i = 0; i < s.size();) {
        if (i + 1 < s.size() && s[i] == a && s[i + 1] == b) {
          s[n++] = z;
          i += 2;
        } else {
          s[n++] = s[i++];
        }
      }
      s.resize(n);
      for (size_t i = 0; i + 1 < n; ++i) {
        const uint64_t k = pair_key(s[i], s[i + 1]);
        pair_counts_[k] += word.count;
        if (s[i] == z || s[i + 1] == z) {
          std::vector<int>& h = pair_words_[k];
          if (h.empty() || h.back() != w) {
            h.push_back(w);
            new_pairs_.push_back(k);
          }
        }
      }
    }
    pair_counts_.erase(key);  // every occurrence is merged
    std::sort(new_pairs_.begin(), new_pairs_.end());
    new_pairs_.erase(std::unique(new_pairs_.begin(), new_pairs_.end()), new_pairs_.end());
    for (const uint64_t k : new_pairs_) push(pair_counts_[k], key_first(k), key_second(k));
  }

  const BpeTrainConfig& config_;
  std::vector<Word> words_;
  std::vector<std::string> symbol_bytes_;  // by symbol id
  std::unordered_set<std::string> taken_;  // the bytes of every token so far, and of specials
  std::unordered_map<uint64_t, int64_t> pair_counts_;
  std::unordered_map<uint64_t, std::vector<int>> pair_words_;  // may hold words that lost it
  std::vector<HeapEntry> heap_;
  Worse worse_{&symbol_bytes_};
  std::vector<uint64_t> new_pairs_;
};

void append_json_string(std::string& out, const std::string& s) { out += nlohmann::json(s).dump(); }

}  // namespace

std::vector<BpeWordCount> count_bpe_words(std::string_view corpus,
                                          std::span<const std::string> special_tokens) {
  check_special_tokens(special_tokens);
  std::string repaired;
  if (!is_valid_utf8(corpus, nullptr)) {
    repaired = sanitize_utf8(corpus);
    corpus = repaired;
  }
  std::unordered_map<std::string_view, size_t> index;
  std::vector<BpeWordCount> out;
  for_each_between_specials(corpus, special_tokens, [&](std::string_view part) {
    for_each_pretoken(part, [&](std::string_view piece) {
      const auto [it, inserted] = index.try_emplace(piece, out.size());
      if (inserted) out.push_back({std::string(piece), 0});
      ++out[it->second].count;
    });
  });
  return out;
}

BpeTrainResult train_bpe_words(std::span<const BpeWordCount> words, const BpeTrainConfig& config) {
  return Trainer(words, config).run();
}

BpeTrainResult train_bpe(std::string_view corpus, const BpeTrainConfig& config) {
  check_config(config);  // before the counting, which can take a while
  const std::vector<BpeWordCount> words = count_bpe_words(corpus, config.special_tokens);
  return train_bpe_words(words, config);
}

std::string BpeTrainResult::tokenizer_json() const {
  const size_t n_learned = token_bytes.size() - special_tokens.size();
  check(n_learned == kBytes + merges.size(), "BPE trainer result: ", token_bytes.size(),
        " tokens do not match 256 bytes + ", merges.size(), " merges + ", special_tokens.size(),
        " special tokens");
  std::vector<std::string> tokens;
  tokens.reserve(token_bytes.size());
  for (size_t id = 0; id < n_learned; ++id) tokens.push_back(byte_level(token_bytes[id]));
  for (const std::string& s : special_tokens) tokens.push_back(s);

  std::string out = "{\n  \"version\": \"1.0\",\n  \"truncation\": null,\n  \"padding\": null,\n";
  out += "  \"added_tokens\": [";
  for (size_t i = 0; i < special_tokens.size(); ++i) {
    out += i ? ",\n" : "\n";
    out += "    {\"id\": " + std::to_string(n_learned + i) + ", \"content\": ";
    append_json_string(out, special_tokens[i]);
    out +=
        ", \"single_word\": false, \"lstrip\": false, \"rstrip\": false, "
        "\"normalized\": false, \"special\": true}";
  }
  out += special_tokens.empty() ? "],\n" : "\n  ],\n";
  out +=
      "  \"normalizer\": null,\n"
      "  \"pre_tokenizer\": {\"type\": \"ByteLevel\", \"add_prefix_space\": false, "
      "\"trim_offsets\": true, \"use_regex\": true},\n"
      "  \"post_processor\": null,\n"
      "  \"decoder\": {\"type\": \"ByteLevel\", \"add_prefix_space\": false, "
      "\"trim_offsets\": true, \"use_regex\": true},\n"
      "  \"model\": {\n"
      "    \"type\": \"BPE\",\n    \"dropout\": null,\n    \"unk_token\": null,\n"
      "    \"continuing_subword_prefix\": null,\n    \"end_of_word_suffix\": null,\n"
      "    \"fuse_unk\": false,\n    \"byte_fallback\": false,\n    \"vocab\": {";
  for (size_t id = 0; id < tokens.size(); ++id) {
    out += id ? ",\n      " : "\n      ";
    append_json_string(out, tokens[id]);
    out += ": " + std::to_string(id);
  }
  // Byte-level tokens never hold a space (the space byte is 'Ġ'), so "a b" is unambiguous.
  out += "\n    },\n    \"merges\": [";
  for (size_t r = 0; r < merges.size(); ++r) {
    const auto [a, b] = merges[r];
    check(a >= 0 && static_cast<size_t>(a) < kBytes + r && b >= 0 &&
              static_cast<size_t>(b) < kBytes + r,
          "BPE trainer result: merge ", r, " joins tokens that do not exist before it");
    out += r ? ",\n      " : "\n      ";
    append_json_string(out, tokens[static_cast<size_t>(a)] + " " + tokens[static_cast<size_t>(b)]);
  }
  out += "\n    ]\n  }\n}\n";
  return out;
}

BpeTokenizer BpeTrainResult::tokenizer() const {
  check(!merges.empty(),
        "BPE trainer result: no merges (the corpus had no pair to merge, or vocab_size left no "
        "room); a tokenizer.json needs at least one");
  return BpeTokenizer::from_tokenizer_json_text(tokenizer_json(), "trained BPE tokenizer.json");
}

void BpeTrainResult::save_tokenizer_json(const std::string& path) const {
  tokenizer().save_tokenizer_json(path);
}

}  // namespace tinylm
