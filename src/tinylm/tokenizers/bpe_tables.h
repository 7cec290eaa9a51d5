#pragma once
// The hash tables of a BPE model (bpe_model.h): token -> id, looked up by the hundred thousand
// while a vocabulary and its merges load; token pair -> merge, looked up at every step of
// merging a pre-token; and the cache of encoded pre-tokens. All three are open addressing with
// linear probing over a flat array at most half full (ProbeTable): a lookup costs about one
// cache miss where std::unordered_map's node per entry cost several.
#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tinylm::bpe_detail {

// The probing shared by the tables: a power-of-two array of Slots. A Slot is empty when
// value-initialized, and has `bool used() const` and `size_t hash() const` (the hash it was
// placed by, for a rehash).
template <class Slot>
class ProbeTable {
 public:
  // Room for n entries without a rehash.
  void reserve(size_t n) {
    if (n * 2 > slots_.size()) rehash(std::bit_ceil(std::max<size_t>(n * 2, 16)));
  }
  size_t size() const { return size_; }
  // Empties every slot, keeping the array.
  void clear() {
    std::fill(slots_.begin(), slots_.end(), Slot{});
    size_ = 0;
  }

  // The used slot on hash h's probe path that `match` accepts, or nullptr.
  template <class Match>
  const Slot* find(size_t h, Match match) const {
    if (slots_.empty()) return nullptr;
    for (size_t i = h & mask();; i = (i + 1) & mask()) {
      const Slot& s = slots_[i];
      if (!s.used()) return nullptr;
      if (match(s)) return &s;
    }
  }

  // The used slot that `match` accepts and false, else the empty slot where an entry of hash h
  // goes and true: the caller fills that slot.
  template <class Match>
  std::pair<Slot*, bool> insert(size_t h, Match match) {
    if ((size_ + 1) * 2 > slots_.size()) rehash(std::max<size_t>(slots_.size() * 2, 16));
    size_t i = h & mask();
    for (; slots_[i].used(); i = (i + 1) & mask()) {
      if (match(slots_[i])) return {&slots_[i], false};
    }
    ++size_;
    return {&slots_[i], true};
  }

 private:
  size_t mask() const { return slots_.size() - 1; }
  void rehash(size_t n) {  // n: a power of two
    std::vector<Slot> old = std::exchange(slots_, std::vector<Slot>(n));
    for (const Slot& s : old) {
      if (!s.used()) continue;
      size_t i = s.hash() & mask();
      while (slots_[i].used()) i = (i + 1) & mask();
      slots_[i] = s;
    }
  }

  std::vector<Slot> slots_;
  size_t size_ = 0;
};

// Token bytes -> id (ids are >= 0). The tokens' bytes are kept in one arena.
class TokenIndex {
 public:
  // Room for n tokens without a rehash.
  void reserve(size_t n) { table_.reserve(n); }
  size_t size() const { return table_.size(); }

  // The id of `token`, or -1.
  int find(std::string_view token) const {
    const size_t h = hash(token);
    const Slot* s = table_.find(h, [&](const Slot& x) { return matches(x, h, token); });
    return s ? s->id : -1;
  }

  // Maps `token` to `id` (>= 0) unless it is mapped already; returns the id it maps to.
  int emplace(std::string_view token, int id) {
    const size_t h = hash(token);
    const auto [s, added] = table_.insert(h, [&](const Slot& x) { return matches(x, h, token); });
    if (added) {
      *s = {h, keys_.size(), static_cast<uint32_t>(token.size()), id};
      keys_.append(token);
    }
    return s->id;
  }

 private:
  struct Slot {
    size_t h = 0;
    size_t key = 0;  // offset into keys_
    uint32_t len = 0;
    int32_t id = -1;  // -1: empty
    bool used() const { return id >= 0; }
    size_t hash() const { return h; }
  };

  static size_t hash(std::string_view s) { return std::hash<std::string_view>{}(s); }
  bool matches(const Slot& s, size_t h, std::string_view token) const {
    return s.h == h && s.len == token.size() &&
           std::memcmp(keys_.data() + s.key, token.data(), s.len) == 0;
  }

  ProbeTable<Slot> table_;
  std::string keys_;
};

// A merge: its rank (the lower merges first) and the token it makes.
struct Merge {
  int rank;
  int result;
};

// The key of the pair of tokens a merge joins.
inline uint64_t pair_key(int a, int b) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
}

// pair_key -> Merge.
class MergeTable {
 public:
  // Room for n merges without a rehash.
  void reserve(size_t n) { table_.reserve(n); }

  // The merge of the pair `key`, or nullptr.
  const Merge* find(uint64_t key) const {
    const Slot* s = table_.find(mix(key), [&](const Slot& x) { return x.key == key; });
    return s ? &s->merge : nullptr;
  }

  // Maps `key` to `merge` (rank >= 0) unless it is mapped already; returns the merge it maps
  // to, and whether that is the new one.
  std::pair<const Merge*, bool> emplace(uint64_t key, Merge merge) {
    const auto [s, added] = table_.insert(mix(key), [&](const Slot& x) { return x.key == key; });
    if (added) *s = {key, merge};
    return {&s->merge, added};
  }

 private:
  // The pair's two ids spread over every bit (MurmurHash3's finalizer), so the low bits index.
  static uint64_t mix(uint64_t k) {
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    k *= 0xc4ceb9fe1a85ec53ULL;
    k ^= k >> 33;
    return k;
  }
  struct Slot {
    uint64_t key = 0;
    Merge merge{-1, -1};  // rank -1: empty
    bool used() const { return merge.rank >= 0; }
    size_t hash() const { return mix(key); }
  };

  ProbeTable<Slot> table_;
};

}  // namespace tinylm::bpe_detail
