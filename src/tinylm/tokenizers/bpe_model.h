#pragma once
// The inside of BpeTokenizer (bpe.h), shared by its two files: the model that a vocabulary and
// a merge list make (built in bpe.cpp), the cache of encoded pre-tokens, and the merging of
// one pre-token into tokens (bpe_merge.cpp).
#include <array>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tinylm/tokenizers/bpe_tables.h"

namespace tinylm::bpe_detail {

// A token for an error message: quoted, control bytes escaped, long ones cut short.
std::string quote_token(std::string_view s);

struct Model {
  std::vector<std::string> tokens;  // by id
  std::vector<std::string> bytes;   // by id: what each token decodes to
  TokenIndex ids;
  std::vector<std::pair<int, int>> merges;  // by rank
  MergeTable merge_table;                   // by pair_key of the two tokens' ids
  std::array<int, 256> byte_ids{};  // the token of each byte; -1 where the vocabulary lacks it
  std::vector<std::pair<std::string, int>> specials;  // content, id; in id order
  std::optional<int> eot;
  // A character vocabulary (char_and_byte_vocab.h): no token but the special ones holds more
  // than one character, and some byte has no token. Encoding with it, each character must be
  // one token: the byte tokens its characters' merges start from spell no other character.
  bool whole_characters = false;
};

// Pre-token bytes -> ids, for pieces of up to kMaxPieceBytes: a ProbeTable (bpe_tables.h) over
// two arenas, the pieces' bytes and their ids. When it holds kMaxEntries it starts over.
struct Cache {
 public:
  static constexpr size_t kMaxEntries = size_t{1} << 16;
  static constexpr size_t kMaxPieceBytes = 256;

  std::mutex mu;  // guards everything below

  // Appends the ids of `piece` to out if it is cached.
  bool lookup(std::string_view piece, size_t hash, std::vector<int>& out) const {
    const Slot* s = table_.find(hash, [&](const Slot& x) { return matches(x, hash, piece); });
    if (s) out.insert(out.end(), ids_.begin() + s->ids, ids_.begin() + s->ids + s->n_ids);
    return s != nullptr;
  }

  void insert(std::string_view piece, size_t hash, std::span<const int> ids) {
    if (piece.empty() || piece.size() > kMaxPieceBytes) return;
    if (table_.size() >= kMaxEntries) {
      table_.clear();
      keys_.clear();
      ids_.clear();
    }
    table_.reserve(kMaxEntries);  // allocated on the first insert, and never grown
    const auto [s, added] =
        table_.insert(hash, [&](const Slot& x) { return matches(x, hash, piece); });
    if (!added) return;  // another thread was first
    *s = {hash, static_cast<uint32_t>(keys_.size()), static_cast<uint32_t>(ids_.size()),
          static_cast<uint16_t>(piece.size()), static_cast<uint16_t>(ids.size())};
    keys_.append(piece);
    ids_.insert(ids_.end(), ids.begin(), ids.end());
  }

 private:
  struct Slot {
    size_t h = 0;
    uint32_t key = 0, ids = 0;        // offsets into keys_ and ids_
    uint16_t key_len = 0, n_ids = 0;  // key_len 0: empty slot (n_ids <= key_len <= 256)
    bool used() const { return key_len != 0; }
    size_t hash() const { return h; }
  };
  bool matches(const Slot& s, size_t hash, std::string_view piece) const {
    return s.h == hash && s.key_len == piece.size() &&
           std::memcmp(keys_.data() + s.key, piece.data(), piece.size()) == 0;
  }

  ProbeTable<Slot> table_;
  std::string keys_;
  std::vector<int> ids_;
};

// ---------------------------------------------------------------------------------------------
// Merging one pre-token

struct Symbol {
  int id;    // -1 once merged into its left neighbour
  int prev;  // -1 at the start
  int next;  // -1 at the end
};

// A merge candidate: rank << 32 | left, for the pair of symbol `left` and its right
// neighbour. When its turn comes it is still good if that pair (whatever it is now) has that
// rank: a rank names one pair of tokens.
using Candidate = uint64_t;

// The working memory of encode_piece, kept across the pre-tokens of one text.
struct Scratch {
  std::vector<Symbol> symbols;
  std::vector<Candidate> heap, pending;
  std::vector<int> ids;
  // Long pieces: rank -> lefts, and a min-heap of the ranks that have lefts.
  std::unordered_map<int, std::vector<int>> buckets;
  std::vector<int> ranks, batch;
};

// Appends the ids of one pre-token to out: from the cache, or merged (bpe.h's rule) with s as
// working memory and then cached. A byte the vocabulary has no token for is an Error naming
// its character.
void encode_piece(const Model& m, Cache& cache, std::string_view piece, std::vector<int>& out,
                  Scratch& s);

}  // namespace tinylm::bpe_detail
