// The BPE model's flat tables (tokenizers/bpe_tables.h) against std::unordered_map: the same
// answers for present and absent keys, through growth past what was reserved, for keys that
// share their low bits; and the pre-token cache (bpe_model.h) through its restart when full.
#include "tinylm/tokenizers/bpe_tables.h"

#include <gtest/gtest.h>

#include <functional>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "tinylm/tokenizers/bpe_model.h"

namespace tinylm::bpe_detail {
namespace TINYLM_TEST_LOCAL {

TEST(TokenIndex, AnswersAsAMap) {
  TokenIndex index;
  EXPECT_EQ(index.find("a"), -1);  // empty, nothing reserved
  EXPECT_EQ(index.find(""), -1);
  index.reserve(8);  // grows well past this below
  std::unordered_map<std::string, int> want;
  std::mt19937 rng(1);
  for (int id = 0; id < 5000; ++id) {
    std::string token(1 + rng() % 12, ' ');
    for (char& c : token) c = static_cast<char>('a' + rng() % 4);  // many repeats
    const auto [it, inserted] = want.emplace(token, id);
    EXPECT_EQ(index.emplace(token, id), it->second) << token;
    EXPECT_EQ(index.size(), want.size());
  }
  for (const auto& [token, id] : want) EXPECT_EQ(index.find(token), id) << token;
  for (const char* absent : {"", "e", "abcde_", "aaaaaaaaaaaaa"}) EXPECT_EQ(index.find(absent), -1);
  // A token with a NUL byte, and one that is a prefix of another.
  EXPECT_EQ(index.emplace(std::string("x\0y", 3), 9000), 9000);
  EXPECT_EQ(index.find(std::string("x\0y", 3)), 9000);
  EXPECT_EQ(index.find("x"), -1);
}

TEST(MergeTable, AnswersAsAMap) {
  MergeTable table;
  EXPECT_EQ(table.find(pair_key(0, 0)), nullptr);
  std::unordered_map<uint64_t, Merge> want;
  int rank = 0;
  // Pairs of small ids (the keys differ in few bits) and pairs that differ only in their high
  // 32 bits, with repeats.
  for (int a = 0; a < 60; ++a) {
    for (int b = 0; b < 60; b += 1 + a % 3) {
      for (const uint64_t key : {pair_key(a, b), pair_key(a * 4096, 7), pair_key(b, a)}) {
        const Merge m{rank, a + b};
        const auto [it, inserted] = want.emplace(key, m);
        const auto [got, added] = table.emplace(key, m);
        ASSERT_EQ(added, inserted);
        EXPECT_EQ(got->rank, it->second.rank);
        rank += inserted;
      }
    }
  }
  for (const auto& [key, m] : want) {
    const Merge* got = table.find(key);
    ASSERT_NE(got, nullptr) << key;
    EXPECT_EQ(got->rank, m.rank);
    EXPECT_EQ(got->result, m.result);
  }
  EXPECT_EQ(table.find(pair_key(61, 0)), nullptr);
  EXPECT_EQ(table.find(pair_key(-1, -1)), nullptr);
}

TEST(PieceCache, AnswersUntilFullThenStartsOver) {
  Cache cache;
  const auto key = [](size_t i) { return "piece" + std::to_string(i); };
  const auto hash = [](const std::string& s) { return std::hash<std::string_view>{}(s); };
  std::vector<int> out;
  EXPECT_FALSE(cache.lookup("piece0", hash("piece0"), out));
  const auto put = [&](size_t i) {
    const std::vector<int> ids = {static_cast<int>(i), -static_cast<int>(i)};
    cache.insert(key(i), hash(key(i)), ids);
  };
  for (size_t i = 0; i + 1 < Cache::kMaxEntries; ++i) put(i);
  cache.insert(key(0), hash(key(0)), std::vector<int>{7});  // present: kept as it was
  put(Cache::kMaxEntries - 1);                              // now full
  for (size_t i : {size_t{0}, size_t{1}, Cache::kMaxEntries - 1}) {
    out.clear();
    ASSERT_TRUE(cache.lookup(key(i), hash(key(i)), out)) << i;
    EXPECT_EQ(out, (std::vector<int>{static_cast<int>(i), -static_cast<int>(i)}));
  }
  // Full: the next new piece empties it first.
  const std::string last = key(Cache::kMaxEntries);
  cache.insert(last, hash(last), std::vector<int>{3});
  out.clear();
  EXPECT_FALSE(cache.lookup(key(1), hash(key(1)), out));
  ASSERT_TRUE(cache.lookup(last, hash(last), out));
  EXPECT_EQ(out, (std::vector<int>{3}));
  // Too long or empty pieces are not cached.
  const std::string long_piece(Cache::kMaxPieceBytes + 1, 'x');
  cache.insert(long_piece, hash(long_piece), std::vector<int>{1});
  EXPECT_FALSE(cache.lookup(long_piece, hash(long_piece), out));
}

}  // namespace TINYLM_TEST_LOCAL
}  // namespace tinylm::bpe_detail
