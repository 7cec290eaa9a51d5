// Core building blocks: Arena, ParamLayout/ParamStore, TensorView/shape_numel, Error/check and
// parallel_for.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <limits>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "test_util.h"
#include "tinylm/core/arena.h"
#include "tinylm/core/error.h"
#include "tinylm/core/parallel.h"
#include "tinylm/core/param_store.h"
#include "tinylm/core/tensor.h"

namespace tinylm {
namespace TINYLM_TEST_LOCAL {

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

uintptr_t addr(const void* p) { return reinterpret_cast<uintptr_t>(p); }

// ---------------------------------------------------------------------------------------------
// Arena

TEST(Arena, CapacityRoundsUpToAlignment) {
  EXPECT_EQ(Arena::kAlign, 64u);
  EXPECT_EQ(Arena(1000).capacity(), 1024u);
  EXPECT_EQ(Arena(1024).capacity(), 1024u);
  EXPECT_EQ(Arena(1).capacity(), 64u);
  EXPECT_EQ(Arena().capacity(), 0u);
}

TEST(Arena, AllocationsAreAlignedAndDisjoint) {
  Arena a(4096);
  EXPECT_EQ(a.used(), 0u);
  std::span<float> f = a.alloc<float>(3);  // 12 bytes -> one 64-byte slot
  EXPECT_EQ(f.size(), 3u);
  EXPECT_EQ(addr(f.data()) % 64, 0u);
  EXPECT_EQ(a.used(), 64u);
  std::span<double> d = a.alloc<double>(17);  // 136 bytes -> 192
  EXPECT_EQ(d.size(), 17u);
  EXPECT_EQ(addr(d.data()) % 64, 0u);
  EXPECT_EQ(addr(d.data()), addr(f.data()) + 64);
  EXPECT_EQ(a.used(), 256u);
  void* c = a.alloc_bytes(1);
  EXPECT_EQ(addr(c) % 64, 0u);
  EXPECT_EQ(addr(c), addr(d.data()) + 192);
  EXPECT_EQ(a.used(), 320u);
  // The memory is usable (ASan would flag a write outside the allocation).
  for (float& x : f) x = 1.5f;
  for (double& x : d) x = -2.0;
  std::memset(c, 0xab, 64);
  EXPECT_EQ(f[2], 1.5f);
  EXPECT_EQ(d[16], -2.0);
}

TEST(Arena, ALargeArenaIsZeroedAndUsableToItsLastByte) {
  // 64 MiB and up takes the huge-page path: a capacity that is not a multiple of 2 MiB.
  const size_t bytes = (size_t{64} << 20) + 4096 + 64;
  Arena a(bytes);
  EXPECT_EQ(a.capacity(), bytes);
  std::span<uint8_t> all = a.alloc<uint8_t>(bytes);
  EXPECT_EQ(addr(all.data()) % 64, 0u);
  EXPECT_EQ(all.front(), 0);
  EXPECT_EQ(all[bytes / 2], 0);
  EXPECT_EQ(all.back(), 0);
  all.back() = 7;  // ASan would flag a write past the allocation
  EXPECT_EQ(all.back(), 7);
  EXPECT_THROW(a.alloc_bytes(1), Error);
}

TEST(Arena, ResetReusesTheSameMemory) {
  Arena a(1024);
  std::span<int> first = a.alloc<int>(10);
  a.alloc<int>(100);
  EXPECT_GT(a.used(), 0u);
  a.reset();
  EXPECT_EQ(a.used(), 0u);
  EXPECT_EQ(a.capacity(), 1024u);
  std::span<int> again = a.alloc<int>(10);
  EXPECT_EQ(again.data(), first.data());
}

TEST(Arena, OverCapacityThrowsWithAMessage) {
  Arena a(256);
  EXPECT_NO_THROW(a.alloc_bytes(256));  // exactly full is fine
  EXPECT_EQ(a.used(), 256u);
  try {
    a.alloc_bytes(1);
    FAIL() << "allocating past capacity did not throw";
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "Arena")) << e.what();
    EXPECT_TRUE(contains(e.what(), "64")) << "should say how much was needed: " << e.what();
  }
  EXPECT_EQ(a.used(), 256u);  // a failed allocation changes nothing
  a.reset();
  EXPECT_THROW(a.alloc<float>(65), Error);  // 260 bytes -> 320 > 256
  EXPECT_NO_THROW(a.alloc<float>(64));

  Arena empty;
  EXPECT_THROW(empty.alloc_bytes(1), Error);
}

TEST(Arena, HugeRequestThrowsInsteadOfWrapping) {
  // A request near SIZE_MAX is over any capacity; rounding it up to the alignment must not
  // wrap around to a small size that then "fits".
  Arena a(128);
  EXPECT_THROW(a.alloc_bytes(std::numeric_limits<size_t>::max() - 10), Error);
  EXPECT_EQ(a.used(), 0u);
  EXPECT_THROW(a.alloc<double>(std::numeric_limits<size_t>::max() / 8), Error);
  EXPECT_EQ(a.used(), 0u);
}

TEST(Arena, FootprintIncludesAlignment) {
  EXPECT_EQ(Arena::footprint<char>(0), 0u);
  EXPECT_EQ(Arena::footprint<char>(1), 64u);
  EXPECT_EQ(Arena::footprint<char>(64), 64u);
  EXPECT_EQ(Arena::footprint<char>(65), 128u);
  EXPECT_EQ(Arena::footprint<float>(16), 64u);
  EXPECT_EQ(Arena::footprint<float>(17), 128u);
  EXPECT_EQ(Arena::footprint<double>(17), 192u);
  // A plan made of footprints fits exactly.
  Arena a(Arena::footprint<float>(100) + Arena::footprint<double>(3));
  EXPECT_NO_THROW(a.alloc<float>(100));
  EXPECT_NO_THROW(a.alloc<double>(3));
  EXPECT_EQ(a.used(), a.capacity());
}

// ---------------------------------------------------------------------------------------------
// ParamLayout / ParamStore

ParamLayout sample_layout() {
  ParamLayout l;
  l.add("wte", {4, 3});
  l.add("bias", {5});
  l.add("scalar", {});
  l.add("empty", {0, 7});
  l.add("last", {2, 2});
  return l;
}

// An aligned layout (a device's) starts each tensor on a multiple of the alignment; the sizes
// are the packed layout's.
TEST(ParamLayout, AlignedLayoutsStartTensorsOnMultiples) {
  ParamLayout l(8);
  l.add("wte", {4, 3});
  l.add("bias", {5});
  l.add("empty", {0, 7});
  l.add("last", {2, 2});
  EXPECT_EQ(l.alignment(), 8u);
  EXPECT_EQ(l.at("wte").offset, 0u);
  EXPECT_EQ(l.at("bias").offset, 16u);
  EXPECT_EQ(l.at("empty").offset, 24u);
  EXPECT_EQ(l.at("last").offset, 24u);
  EXPECT_EQ(l.at("last").numel, 4u);
  EXPECT_EQ(l.size(), 28u);
  EXPECT_EQ(ParamLayout().alignment(), 1u);
}

TEST(ParamLayout, OffsetsFollowInsertionOrder) {
  const ParamLayout l = sample_layout();
  ASSERT_EQ(l.entries().size(), 5u);
  struct Want {
    const char* name;
    size_t offset, numel;
  };
  const Want want[] = {
      {"wte", 0, 12}, {"bias", 12, 5}, {"scalar", 17, 1}, {"empty", 18, 0}, {"last", 18, 4}};
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(l.entries()[i].name, want[i].name);
    EXPECT_EQ(l.entries()[i].offset, want[i].offset) << want[i].name;
    EXPECT_EQ(l.entries()[i].numel, want[i].numel) << want[i].name;
  }
  EXPECT_EQ(l.size(), 22u);
  EXPECT_EQ(l.at("bias").shape, (Shape{5}));
  EXPECT_EQ(l.at("last").offset, 18u);
  EXPECT_EQ(l.find("bias"), &l.entries()[1]);
  EXPECT_EQ(l.find("nope"), nullptr);
}

TEST(ParamLayout, AddReturnsTheNewEntry) {
  ParamLayout l;
  l.add("a", {3});
  const ParamEntry& e = l.add("b", {2, 5});
  EXPECT_EQ(e.name, "b");
  EXPECT_EQ(e.offset, 3u);
  EXPECT_EQ(e.numel, 10u);
}

TEST(ParamLayout, DuplicateNameThrows) {
  ParamLayout l = sample_layout();
  try {
    l.add("bias", {1});
    FAIL() << "duplicate name accepted";
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "bias")) << e.what();
  }
  EXPECT_EQ(l.entries().size(), 5u);
  EXPECT_EQ(l.size(), 22u);
}

TEST(ParamLayout, MissingNameThrows) {
  const ParamLayout l = sample_layout();
  try {
    l.at("lm_head");
    FAIL() << "at() of a missing name did not throw";
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "lm_head")) << e.what();
  }
}

TEST(ParamLayout, BadShapeThrows) {
  ParamLayout l;
  EXPECT_THROW(l.add("neg", {2, -1}), Error);
}

TEST(ParamStore, ViewsPointIntoTheFlatBuffer) {
  ParamStore<float> s(sample_layout());
  EXPECT_EQ(s.flat().size(), 22u);
  TensorView<float> wte = s.view("wte");
  TensorView<float> bias = s.view("bias");
  TensorView<float> last = s.view("last");
  EXPECT_EQ(wte.data, s.flat().data());
  EXPECT_EQ(bias.data, s.flat().data() + 12);
  EXPECT_EQ(last.data, s.flat().data() + 18);
  EXPECT_EQ(wte.shape, (Shape{4, 3}));
  EXPECT_EQ(s.view("scalar").shape, Shape{});
  EXPECT_EQ(s.view("scalar").numel(), 1);
  EXPECT_EQ(s.view("empty").numel(), 0);

  for (float& x : s.flat()) EXPECT_EQ(x, 0.0f);  // value-initialised
  wte.row(2)[1] = 7.0f;                          // element (2, 1) = flat index 7
  EXPECT_EQ(s.flat()[7], 7.0f);
  bias.span()[4] = 3.0f;
  EXPECT_EQ(s.flat()[16], 3.0f);

  const ParamStore<float>& cs = s;
  TensorView<const float> cb = cs.view("bias");
  static_assert(std::is_same_v<decltype(cb.data), const float*>);
  EXPECT_EQ(cb.span()[4], 3.0f);
  EXPECT_EQ(cs.flat().size(), 22u);

  s.zero();
  EXPECT_EQ(s.flat()[7], 0.0f);
  EXPECT_EQ(s.flat()[16], 0.0f);
  EXPECT_THROW(s.view("missing"), Error);
}

// ---------------------------------------------------------------------------------------------
// TensorView / shape_numel

TEST(Tensor, ShapeNumel) {
  EXPECT_EQ(shape_numel({}), 1);
  EXPECT_EQ(shape_numel({7}), 7);
  EXPECT_EQ(shape_numel({2, 3, 4}), 24);
  EXPECT_EQ(shape_numel({5, 0, 3}), 0);
  EXPECT_EQ(shape_numel({int64_t{1} << 31, int64_t{1} << 31}), int64_t{1} << 62);
  EXPECT_EQ(shape_numel({std::numeric_limits<int64_t>::max()}),
            std::numeric_limits<int64_t>::max());
  EXPECT_EQ(shape_numel({0, std::numeric_limits<int64_t>::max(), 2}), 0);
}

TEST(Tensor, ShapeNumelOverflowThrows) {
  EXPECT_THROW(shape_numel({int64_t{1} << 32, int64_t{1} << 31}), Error);  // 2^63
  EXPECT_THROW(shape_numel({std::numeric_limits<int64_t>::max(), 2}), Error);
  EXPECT_THROW(shape_numel({3037000500, 3037000500}), Error);  // just over sqrt(2^63)
  EXPECT_EQ(shape_numel({3037000499, 3037000499}), int64_t{3037000499} * 3037000499);
  try {
    shape_numel({int64_t{1} << 40, int64_t{1} << 40});
    FAIL() << "overflow not detected";
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "[1099511627776, 1099511627776]")) << e.what();
  }
}

TEST(Tensor, NegativeDimensionThrows) {
  EXPECT_THROW(shape_numel({-1}), Error);
  EXPECT_THROW(shape_numel({0, -3}), Error);
  try {
    shape_numel({3, -1});
    FAIL() << "negative dimension accepted";
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "[3, -1]")) << e.what();
  }
}

TEST(Tensor, ShapeStr) {
  EXPECT_EQ(shape_str({}), "[]");
  EXPECT_EQ(shape_str({3}), "[3]");
  EXPECT_EQ(shape_str({3, 4}), "[3, 4]");
}

TEST(Tensor, ViewRowsAndSpans) {
  std::vector<int> buf(12);
  for (int i = 0; i < 12; ++i) buf[i] = i;
  TensorView<int> v{buf.data(), {3, 4}};
  EXPECT_EQ(v.numel(), 12);
  EXPECT_EQ(v.dim(0), 3);
  EXPECT_EQ(v.dim(1), 4);
  EXPECT_THROW(v.dim(2), std::out_of_range);
  EXPECT_EQ(v.span().size(), 12u);
  std::span<int> r = v.row(2);
  ASSERT_EQ(r.size(), 4u);
  EXPECT_EQ(r[0], 8);
  EXPECT_EQ(r[3], 11);
}

// ---------------------------------------------------------------------------------------------
// Error / check

TEST(Error, CheckAndFail) {
  static_assert(std::is_base_of_v<std::runtime_error, Error>);
  EXPECT_NO_THROW(check(true, "never"));
  try {
    check(false, "value ", 42, " is not ", 'x', " (", 1.5, ")");
    FAIL() << "check(false) did not throw";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "value 42 is not x (1.5)");
  }
  try {
    fail("file.bin", ": bad header");
  } catch (const std::runtime_error& e) {  // catchable as runtime_error
    EXPECT_STREQ(e.what(), "file.bin: bad header");
  }
  EXPECT_EQ(cat("a", 1, "b", 2u), "a1b2");
  EXPECT_EQ(cat(), "");
}

// ---------------------------------------------------------------------------------------------
// parallel_for

class ParallelFor : public ::testing::Test {
 protected:
  void SetUp() override { saved_ = num_threads(); }
  void TearDown() override { set_num_threads(saved_); }

  // Runs parallel_for over [begin, end) and returns how many times each index was visited,
  // plus the set of OpenMP thread numbers that ran an iteration.
  static std::vector<int> visit(int64_t begin, int64_t end, int64_t grain, std::set<int>* threads) {
    std::vector<std::atomic<int>> hits(static_cast<size_t>(end > 0 ? end : 0) + 1);
    std::mutex mu;
    parallel_for(begin, end, grain, [&](int64_t i) {
      hits[static_cast<size_t>(i)].fetch_add(1, std::memory_order_relaxed);
      if (threads) {
        std::lock_guard<std::mutex> lock(mu);
        threads->insert(omp_get_thread_num());
      }
    });
    std::vector<int> out;
    for (auto& h : hits) out.push_back(h.load());
    return out;
  }

 private:
  int saved_ = 1;
};

TEST_F(ParallelFor, OneThreadCoversEveryIndexOnce) {
  set_num_threads(1);
  EXPECT_EQ(num_threads(), 1);
  std::set<int> threads;
  const std::vector<int> hits = visit(3, 5000, 1, &threads);
  for (int64_t i = 0; i <= 5000; ++i)
    EXPECT_EQ(hits[i], (i >= 3 && i < 5000) ? 1 : 0) << "index " << i;
  EXPECT_EQ(threads, std::set<int>{0});
}

TEST_F(ParallelFor, TwoThreadsCoverEveryIndexOnce) {
  set_num_threads(2);
  EXPECT_EQ(num_threads(), 2);
  std::set<int> threads;
  const std::vector<int> hits = visit(0, 10007, 1, &threads);
  int bad = 0;
  for (int64_t i = 0; i < 10007; ++i) bad += hits[i] != 1;
  EXPECT_EQ(bad, 0);
  EXPECT_EQ(hits[10007], 0);
  if (!omp_get_dynamic()) {
    EXPECT_EQ(threads, (std::set<int>{0, 1}));
  }
  // Odd sizes and an offset start.
  const std::vector<int> h2 = visit(17, 20, 1, nullptr);
  for (int64_t i = 0; i <= 20; ++i) EXPECT_EQ(h2[i], (i >= 17 && i < 20) ? 1 : 0) << "index " << i;
}

TEST_F(ParallelFor, SmallRangesRunInline) {
  set_num_threads(2);
  const std::thread::id caller = std::this_thread::get_id();
  int count = 0;  // not atomic: inline execution makes this safe
  bool all_inline = true;
  parallel_for(10, 74, 64, [&](int64_t) {  // n == grain: inline
    ++count;
    all_inline &= std::this_thread::get_id() == caller && !omp_in_parallel();
  });
  EXPECT_EQ(count, 64);
  EXPECT_TRUE(all_inline);

  // Nested inside a parallel region: runs inline on the calling thread.
  std::atomic<int> nested_ok{0}, nested_total{0};
#pragma omp parallel num_threads(2)
  {
    const std::thread::id me = std::this_thread::get_id();
    parallel_for(0, 1000, 1, [&](int64_t) {
      nested_total.fetch_add(1);
      if (std::this_thread::get_id() == me) nested_ok.fetch_add(1);
    });
  }
  EXPECT_EQ(nested_ok.load(), nested_total.load());
  EXPECT_GE(nested_total.load(), 1000);
}

TEST_F(ParallelFor, EmptyAndReversedRangesDoNothing) {
  set_num_threads(2);
  int calls = 0;
  parallel_for(5, 5, 1, [&](int64_t) { ++calls; });
  parallel_for(9, 2, 1, [&](int64_t) { ++calls; });
  EXPECT_EQ(calls, 0);
  // A non-positive grain is treated as 1.
  const std::vector<int> hits = visit(0, 100, 0, nullptr);
  for (int64_t i = 0; i < 100; ++i) EXPECT_EQ(hits[i], 1) << "index " << i;
  const std::vector<int> hits2 = visit(0, 100, -5, nullptr);
  for (int64_t i = 0; i < 100; ++i) EXPECT_EQ(hits2[i], 1) << "index " << i;
}

TEST_F(ParallelFor, ChunkQueueHandsOutEveryChunkOnceAndSharesInOrder) {
  // One thread draining a queue built for four: its own share first, in order, then the
  // others' from their tails.
  ChunkQueue one(10, 4);  // shares [0,2) [2,5) [5,7) [7,10)
  std::vector<int64_t> order;
  for (int64_t c; (c = one.next(1)) >= 0;) order.push_back(c);
  EXPECT_EQ(order, (std::vector<int64_t>{2, 3, 4, 6, 5, 9, 8, 7, 1, 0}));
  EXPECT_EQ(one.next(0), -1);

  // Eight threads racing over a queue built for three: every chunk exactly once.
  for (const int64_t n : {0, 1, 5, 1000}) {
    ChunkQueue q(n, 3);
    std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
#pragma omp parallel num_threads(8)
    for (int64_t c; (c = q.next(omp_get_thread_num() % 3)) >= 0;)
      hits[static_cast<size_t>(c)].fetch_add(1);
    int bad = 0;
    for (auto& h : hits) bad += h.load() != 1;
    EXPECT_EQ(bad, 0) << n << " chunks";
  }
}

TEST_F(ParallelFor, BalancedCoversEveryIndexOnce) {
  // (Which threads run items is not asserted: one thread may take them all if it is quick.)
  set_num_threads(2);
  std::vector<std::atomic<int>> hits(777);
  parallel_for_balanced(777, [&](int64_t i) { hits[static_cast<size_t>(i)].fetch_add(1); });
  int bad = 0;
  for (auto& h : hits) bad += h.load() != 1;
  EXPECT_EQ(bad, 0);
  int calls = 0;
  parallel_for_balanced(0, [&](int64_t) { ++calls; });
  EXPECT_EQ(calls, 0);
}

TEST_F(ParallelFor, RegionPassesItsTeamAndRunsInlineWhenNested) {
  set_num_threads(2);
  std::atomic<int> ran{0}, team_sum{0};
  parallel_region(8, [&](int thread, int nthreads) {
    EXPECT_LT(thread, nthreads);
    ran.fetch_add(1);
    team_sum.fetch_add(nthreads);
    barrier();
  });
  EXPECT_EQ(team_sum.load(), ran.load() * ran.load());  // every thread saw the same team size
  EXPECT_LE(ran.load(), 2);
#pragma omp parallel num_threads(2)
  parallel_region(8, [&](int thread, int nthreads) {
    EXPECT_EQ(thread, 0);
    EXPECT_EQ(nthreads, 1);
  });
}

// 0 is the flags' default (all cores); a negative or huge count is an error, not a silent
// "all cores" or a crash inside the OpenMP runtime.
TEST_F(ParallelFor, ZeroThreadsMeansAllCoresAndOtherCountsAreBounded) {
  set_num_threads(0);
  EXPECT_EQ(num_threads(), omp_get_num_procs());
  EXPECT_GE(max_threads(), 8);
  EXPECT_LE(max_threads(), kMaxThreadsCap);
  EXPECT_GE(max_threads(), std::min(4 * omp_get_num_procs(), kMaxThreadsCap));
  set_num_threads(max_threads());
  EXPECT_EQ(num_threads(), max_threads());
  for (const int64_t bad :
       {int64_t{-1}, int64_t{-3}, int64_t{max_threads()} + 1, int64_t{100000}, int64_t{1} << 40}) {
    test::expect_error([&] { set_num_threads(bad); }, {"--threads", "must be in 1.."});
    test::expect_error([&] { check_threads(bad, "--jobs"); }, {"--jobs"});
  }
  test::expect_error([&] { check_threads(0); }, {"--threads 0"});
  EXPECT_EQ(num_threads(), max_threads());  // a refused count changes nothing
}

}  // namespace TINYLM_TEST_LOCAL
}  // namespace tinylm
