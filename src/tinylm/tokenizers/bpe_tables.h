#pragma once
// The two lookups of a BPE model (bpe_model.h): token -> id, made by the hundred thousand while
// a vocabulary and its merges load, and token pair -> merge, made at every step of merging a
// pre-token. Flat open-addressing tables with linear probing, at most half full: a lookup costs
// about one cache miss where std::unordered_map's node per entry cost several.
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

// Token bytes -> id (ids are >= 0). The tokens' bytes are kept in one arena.
class TokenIndex {
 public:
  // Room for n tokens without a rehash.
  void reserve(size_t n) {
    if (n * 2 > slots_.size()) rehash(std::bit_ceil(std::max<size_t>(n * 2, 16)));
  }
  size_t size() const { return size_; }

  // The id of `token`, or -1.
  int find(std::string_view token) const {
    if (slots_.empty()) return -1;
    const size_t h = hash(token);
    for (size_t i = h & mask();; i = (i + 1) & mask()) {
      const Slot& s = slots_[i];
      if (s.id < 0) return -1;
      if (s.hash == h && equal(s, token)) return s.id;
    }
  }

  // Maps `token` to `id` (>= 0) unless it is mapped already; returns the id it maps to.
  int emplace(std::string_view token, int id) {
    if ((size_ + 1) * 2 > slots_.size()) rehash(std::max<size_t>(slots_.size() * 2, 16));
    const size_t h = hash(token);
    size_t i = h & mask();
    for (; slots_[i].id >= 0; i = (i + 1) & mask()) {
      if (slots_[i].hash == h && equal(slots_[i], token)) return slots_[i].id;
    }
    slots_[i] = {h, keys_.size(), static_cast<uint32_t>(token.size()), id};
    keys_.append(token);
    ++size_;
    return id;
  }

 private:
  struct Slot {
    size_t hash = 0;
    size_t key = 0;  // offset into keys_
    uint32_t len = 0;
    int32_t id = -1;  // -1: empty
  };

  static size_t hash(std::string_view s) { return std::hash<std::string_view>{}(s); }
  size_t mask() const { return slots_.size() - 1; }
  bool equal(const Slot& s, std::string_view token) const {
    return s.len == token.size() && std::memcmp(keys_.data() + s.key, token.data(), s.len) == 0;
  }
  void rehash(size_t n) {  // n: a power of two
    std::vector<Slot> old = std::exchange(slots_, std::vector<Slot>(n));
    for (const Slot& s : old) {
      if (s.id < 0) continue;
      size_t i = s.hash & mask();
      while (slots_[i].id >= 0) i = (i + 1) & mask();
      slots_[i] = s;
    }
  }

  std::vector<Slot> slots_;
  std::string keys_;
  size_t size_ = 0;
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
  void reserve(size_t n) {
    if (n * 2 > slots_.size()) rehash(std::bit_ceil(std::max<size_t>(n * 2, 16)));
  }

  // The merge of the pair `key`, or nullptr.
  const Merge* find(uint64_t key) const {
    if (slots_.empty()) return nullptr;
    for (size_t i = mix(key) & mask();; i = (i + 1) & mask()) {
      const Slot& s = slots_[i];
      if (s.merge.rank < 0) return nullptr;
      if (s.key == key) return &s.merge;
    }
  }

  // Maps `key` to `merge` (rank >= 0) unless it is mapped already; returns the merge it maps
  // to, and whether that is the new one.
  std::pair<const Merge*, bool> emplace(uint64_t key, Merge merge) {
    if ((size_ + 1) * 2 > slots_.size()) rehash(std::max<size_t>(slots_.size() * 2, 16));
    size_t i = mix(key) & mask();
    for (; slots_[i].merge.rank >= 0; i = (i + 1) & mask()) {
      if (slots_[i].key == key) return {&slots_[i].merge, false};
    }
    slots_[i] = {key, merge};
    ++size_;
    return {&slots_[i].merge, true};
  }

 private:
  struct Slot {
    uint64_t key = 0;
    Merge merge{-1, -1};  // rank -1: empty
  };

  // The pair's two ids spread over every bit (MurmurHash3's finalizer), so the low bits index.
  static uint64_t mix(uint64_t k) {
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    k *= 0xc4ceb9fe1a85ec53ULL;
    k ^= k >> 33;
    return k;
  }
  size_t mask() const { return slots_.size() - 1; }
  void rehash(size_t n) {  // n: a power of two
    std::vector<Slot> old = std::exchange(slots_, std::vector<Slot>(n));
    for (const Slot& s : old) {
      if (s.merge.rank < 0) continue;
      size_t i = mix(s.key) & mask();
      while (slots_[i].merge.rank >= 0) i = (i + 1) & mask();
      slots_[i] = s;
    }
  }

  std::vector<Slot> slots_;
  size_t size_ = 0;
};

}  // namespace tinylm::bpe_detail
