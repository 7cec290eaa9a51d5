// Merging one pre-token's bytes into tokens, the rule bpe.h states, in O(n log n).
#include <algorithm>
#include <climits>
#include <cstdio>

#include "tinylm/core/error.h"
#include "tinylm/core/utf8.h"
#include "tinylm/tokenizers/bpe.h"
#include "tinylm/tokenizers/bpe_model.h"

namespace tinylm::bpe_detail {

std::string quote_token(std::string_view s) {
  std::string out = "'";
  size_t i = 0;
  for (; i < s.size() && i < 80; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == 0x7F) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02X", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  while (i < s.size() && is_utf8_continuation(s[i])) out += s[i++];
  if (i < s.size()) out += "...";
  return out + "'";
}

namespace {

Candidate make_candidate(int rank, int left) {
  return static_cast<uint64_t>(rank) << 32 | static_cast<uint32_t>(left);
}
int candidate_rank(Candidate c) { return static_cast<int>(c >> 32); }
int candidate_left(Candidate c) { return static_cast<int>(c & 0xFFFFFFFFu); }

// The character of `piece` (valid UTF-8) that holds byte `at` has no token: names it, and for a
// vocabulary of more than characters, the byte without a token (`at`'s) and how it is written.
[[noreturn]] void fail_no_token(const Model& m, std::string_view piece, size_t at) {
  size_t begin = at;
  while (begin > 0 && is_utf8_continuation(piece[begin])) --begin;
  int len = 1;
  const char32_t c = utf8_at(piece, begin, &len);
  const std::string character = quote_token(piece.substr(begin, static_cast<size_t>(len)));
  char code[16];
  std::snprintf(code, sizeof code, "U+%04X", static_cast<unsigned>(c));
  if (m.whole_characters)
    fail("the vocabulary has no token for the character ", character, " (", code, ")");
  const auto b = static_cast<unsigned char>(piece[at]);
  std::string token;
  append_utf8(token, byte_to_unicode(b));
  char byte[16];
  std::snprintf(byte, sizeof byte, "0x%02X", b);
  fail("the vocabulary has no token for the character ", character, " (", code, "; byte ", byte,
       ", whose token would be ", quote_token(token), ")");
}

// The merge of symbol `left` with its right neighbour, if the pair has a rank.
const Merge* merge_at(const Model& m, const Scratch& s, int left) {
  const Symbol& l = s.symbols[static_cast<size_t>(left)];
  if (l.id < 0 || l.next < 0) return nullptr;
  return m.merge_table.find(pair_key(l.id, s.symbols[static_cast<size_t>(l.next)].id));
}

void add_candidate(const Model& m, const Scratch& s, int left, std::vector<Candidate>& to) {
  if (const Merge* mg = merge_at(m, s, left)) to.push_back(make_candidate(mg->rank, left));
}

// Merges symbol `left` with its right neighbour (the pair of rank `rank`), if that is still
// the pair there; the pairs this makes go to s.pending.
void merge_if_current(const Model& m, Scratch& s, int left, int rank) {
  const Merge* mg = merge_at(m, s, left);
  if (!mg || mg->rank != rank) return;  // stale: the pair there has changed
  Symbol& l = s.symbols[static_cast<size_t>(left)];
  Symbol& r = s.symbols[static_cast<size_t>(l.next)];
  l.id = mg->result;
  r.id = -1;
  l.next = r.next;
  if (l.next >= 0) s.symbols[static_cast<size_t>(l.next)].prev = left;
  if (l.prev >= 0) add_candidate(m, s, l.prev, s.pending);
  add_candidate(m, s, left, s.pending);
}

// Short pieces: one heap of candidates ordered by (rank, left).
void merge_with_heap(const Model& m, Scratch& s) {
  const auto after = std::greater<Candidate>();
  s.heap.clear();
  for (int i = 0; i + 1 < static_cast<int>(s.symbols.size()); ++i) add_candidate(m, s, i, s.heap);
  std::make_heap(s.heap.begin(), s.heap.end(), after);
  while (!s.heap.empty()) {
    const int rank = candidate_rank(s.heap.front());
    s.pending.clear();
    while (!s.heap.empty() && candidate_rank(s.heap.front()) == rank) {
      std::pop_heap(s.heap.begin(), s.heap.end(), after);
      const int left = candidate_left(s.heap.back());
      s.heap.pop_back();
      merge_if_current(m, s, left, rank);
    }
    for (const Candidate c : s.pending) {
      s.heap.push_back(c);
      std::push_heap(s.heap.begin(), s.heap.end(), after);
    }
  }
}

// Long pieces (e.g. a megabyte of one letter): the lefts of each rank in a bucket, sorted when
// the rank's turn comes. The same order as the heap, with far better memory locality.
void merge_with_buckets(const Model& m, Scratch& s) {
  const auto after = std::greater<int>();
  s.buckets.clear();
  s.ranks.clear();
  const auto add = [&](int rank, int left) {
    const auto [it, inserted] = s.buckets.try_emplace(rank);
    if (inserted) {
      s.ranks.push_back(rank);
      std::push_heap(s.ranks.begin(), s.ranks.end(), after);
    }
    it->second.push_back(left);
  };
  for (int i = 0; i + 1 < static_cast<int>(s.symbols.size()); ++i) {
    if (const Merge* mg = merge_at(m, s, i)) add(mg->rank, i);
  }
  while (!s.ranks.empty()) {
    std::pop_heap(s.ranks.begin(), s.ranks.end(), after);
    const int rank = s.ranks.back();
    s.ranks.pop_back();
    auto node = s.buckets.extract(rank);
    s.batch.swap(node.mapped());
    if (!std::is_sorted(s.batch.begin(), s.batch.end())) std::sort(s.batch.begin(), s.batch.end());
    s.pending.clear();
    for (const int left : s.batch) merge_if_current(m, s, left, rank);
    // No pair of this rank can appear again (a merged symbol is longer than either part), so
    // the rank's bucket is done; the pairs made meanwhile join their own ranks' buckets.
    for (const Candidate c : s.pending) add(candidate_rank(c), candidate_left(c));
  }
}

constexpr size_t kHeapMaxSymbols = 64;

// The ids of one pre-token into s.ids. What the plain algorithm does (find the lowest-ranked
// adjacent pair, merge all its non-overlapping occurrences left to right, repeat), done in
// O(n log n) with a linked list of symbols and candidate pairs ordered by (rank, position):
// the candidates of one rank are taken left to right, and those that the merges of that rank
// create wait in s.pending until the rank is done (a merge list need not rank a pair after
// the pairs that make its parts, and then the order matters).
void bpe_merge(const Model& m, std::string_view piece, Scratch& s) {
  check(piece.size() < static_cast<size_t>(INT_MAX), "BPE: pre-token too long");
  const int n = static_cast<int>(piece.size());
  s.symbols.resize(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    const auto b = static_cast<unsigned char>(piece[static_cast<size_t>(i)]);
    const int id = m.byte_ids[b];
    if (id < 0) fail_no_token(m, piece, static_cast<size_t>(i));
    s.symbols[static_cast<size_t>(i)] = {id, i - 1, i + 1 < n ? i + 1 : -1};
  }
  if (piece.size() <= kHeapMaxSymbols) {
    merge_with_heap(m, s);
  } else {
    merge_with_buckets(m, s);
  }
  s.ids.clear();
  for (int i = 0; i >= 0; i = s.symbols[static_cast<size_t>(i)].next) {
    s.ids.push_back(s.symbols[static_cast<size_t>(i)].id);
  }
}

// A character vocabulary's tokens for `piece` must each be a whole character: one that its
// merges leave in parts was not in the text the vocabulary was made from.
void check_whole_characters(const Model& m, std::string_view piece, std::span<const int> ids) {
  size_t at = 0;
  for (const int id : ids) {
    const size_t size = m.bytes[static_cast<size_t>(id)].size();
    int len = 1;
    utf8_at(piece, at, &len);
    if (size != static_cast<size_t>(len)) fail_no_token(m, piece, at);
    at += size;
  }
}

}  // namespace

void encode_piece(const Model& m, Cache& cache, std::string_view piece, std::vector<int>& out,
                  Scratch& s) {
  if (piece.size() == 1) {
    const auto b = static_cast<unsigned char>(piece[0]);
    if (m.byte_ids[b] < 0) fail_no_token(m, piece, 0);
    out.push_back(m.byte_ids[b]);
    return;
  }
  const bool cacheable = piece.size() <= Cache::kMaxPieceBytes;
  const size_t hash = cacheable ? std::hash<std::string_view>{}(piece) : 0;
  if (cacheable) {
    const std::lock_guard<std::mutex> lock(cache.mu);
    if (cache.lookup(piece, hash, out)) return;
  }
  bpe_merge(m, piece, s);
  if (m.whole_characters) check_whole_characters(m, piece, s.ids);
  out.insert(out.end(), s.ids.begin(), s.ids.end());
  if (cacheable) {
    const std::lock_guard<std::mutex> lock(cache.mu);
    cache.insert(piece, hash, s.ids);
  }
}

}  // namespace tinylm::bpe_detail
