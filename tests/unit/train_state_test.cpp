// train_state.bin: float and double states round trip bit for bit (moments of any bit pattern,
// doubles that need all 17 digits); the layout is the documented one, checked against a
// writer in this file; every truncation, every flipped byte and every malformed field is a
// one-line Error naming the file; a failed save leaves the previous file in place.
#include "tinylm/train/train_state.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "test_util.h"
#include "tinylm/core/error.h"
#include "tinylm/io/crc32.h"
#include "tinylm/io/text_file.h"

namespace tinylm {
namespace TINYLM_TEST_LOCAL {

using Json = nlohmann::ordered_json;
using test::expect_error;
using train::TrainState;

constexpr double kDblMax = std::numeric_limits<double>::max();
constexpr double kDenormMin = std::numeric_limits<double>::denorm_min();

// Doubles whose shortest decimal spelling is long or easy to get wrong.
const std::vector<double> kAwkward = {0.1,
                                      1.0 / 3.0,
                                      0.30000000000000004,
                                      2.0 / 3.0 * 1e-300,
                                      kDenormMin,
                                      3 * kDenormMin,
                                      std::numeric_limits<double>::min(),
                                      std::nextafter(std::numeric_limits<double>::min(), 0.0),
                                      kDblMax,
                                      std::nextafter(1.0, 2.0),
                                      std::nextafter(1.0, 0.0),
                                      9007199254740993.0,  // 2^53 + 1, rounded
                                      123456789.12345679,
                                      1e22,
                                      1e23,
                                      5e-324 * 7,
                                      6.02214076e23,
                                      -0.0};

template <class T>
std::vector<T> any_bits(size_t n, uint64_t seed) {
  using U = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
  std::mt19937_64 rng(seed);
  std::vector<T> v(n);
  for (T& x : v) x = std::bit_cast<T>(static_cast<U>(rng()));  // NaN payloads included
  if (n > 2) v[0] = T(-0.0), v[1] = std::numeric_limits<T>::infinity();
  return v;
}

template <class T>
TrainState<T> sample_state(size_t n, bool with_best) {
  TrainState<T> s;
  s.arch = sizeof(T) == 4 ? "gpt2" : "microgpt";
  s.loop.step = 1234;
  s.loop.applied_steps = 1200;
  s.loop.tokens_seen = int64_t{1} << 40;
  s.loop.bad_steps_in_a_row = 3;
  if (with_best) s.loop.best_val_loss = 1.0 / 3.0;
  s.loop.best_val_step = 1000;
  s.loop.loss_scale = 32768.0;
  s.loop.scaler_good_in_a_row = 17;
  s.loop.scaler_skipped = 34;
  s.loop.elapsed_s = 0.1 + 0.2;
  s.shards = 3;
  s.config = {{"arch", s.arch}, {"lr", 6e-4}, {"steps", 5000}, {"data", {"a.txt", "b.txt"}}};
  if (with_best) s.files = {{{"model.safetensors", 0xfedcba98u}, {"config.json", 0}}};
  s.m = any_bits<T>(n, 1);
  s.v = any_bits<T>(n, 2);
  return s;
}

template <class T>
std::vector<uint64_t> bits(const std::vector<T>& v) {
  std::vector<uint64_t> out;
  for (T x : v)
    out.push_back(sizeof(T) == 4 ? std::bit_cast<uint32_t>(static_cast<float>(x))
                                 : std::bit_cast<uint64_t>(static_cast<double>(x)));
  return out;
}

uint64_t dbits(double x) { return std::bit_cast<uint64_t>(x); }

template <class T>
void expect_same(const TrainState<T>& a, const TrainState<T>& b) {
  EXPECT_EQ(a.arch, b.arch);
  EXPECT_EQ(a.shards, b.shards);
  EXPECT_EQ(a.loop.step, b.loop.step);
  EXPECT_EQ(a.loop.applied_steps, b.loop.applied_steps);
  EXPECT_EQ(a.loop.tokens_seen, b.loop.tokens_seen);
  EXPECT_EQ(a.loop.bad_steps_in_a_row, b.loop.bad_steps_in_a_row);
  ASSERT_EQ(a.loop.best_val_loss.has_value(), b.loop.best_val_loss.has_value());
  EXPECT_EQ(dbits(a.loop.best_val_loss.value_or(0)), dbits(b.loop.best_val_loss.value_or(0)));
  EXPECT_EQ(a.loop.best_val_step, b.loop.best_val_step);
  EXPECT_EQ(dbits(a.loop.loss_scale), dbits(b.loop.loss_scale));
  EXPECT_EQ(a.loop.scaler_good_in_a_row, b.loop.scaler_good_in_a_row);
  EXPECT_EQ(a.loop.scaler_skipped, b.loop.scaler_skipped);
  EXPECT_EQ(dbits(a.loop.elapsed_s), dbits(b.loop.elapsed_s));
  EXPECT_EQ(a.config.dump(), b.config.dump());
  EXPECT_EQ(a.files, b.files);
  EXPECT_EQ(bits(a.m), bits(b.m));
  EXPECT_EQ(bits(a.v), bits(b.v));
}

void write_bytes(const std::string& path, std::span<const std::byte> bytes) {
  test::write_text(path, std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
}

std::vector<std::byte> read_bytes(const std::string& path) {
  const std::string s = io::read_file(path);
  const auto* p = reinterpret_cast<const std::byte*>(s.data());
  return {p, p + s.size()};
}

// An independent writer of the documented layout, for files the library would refuse to write.
std::vector<std::byte> build_file(const std::string& json, uint32_t dtype,
                                  const std::vector<std::byte>& moments, uint64_t n,
                                  uint8_t pad_byte = 0) {
  std::vector<std::byte> out;
  const auto put = [&](uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) out.push_back(static_cast<std::byte>(v >> (8 * i)));
  };
  for (char c : std::string("TLMSTATE")) out.push_back(static_cast<std::byte>(c));
  put(1, 4);
  put(dtype, 4);
  put(n, 8);
  put(json.size(), 8);
  for (char c : json) out.push_back(static_cast<std::byte>(c));
  while (out.size() % 64 != 0) out.push_back(static_cast<std::byte>(pad_byte));
  out.insert(out.end(), moments.begin(), moments.end());
  put(io::crc32(out), 4);
  return out;
}

// A state's JSON as the library writes it (the fields in the struct's order).
Json sample_json() {
  return Json::parse(R"({"arch":"gpt2","step":10,"applied_steps":9,"tokens_seen":100,
    "bad_steps_in_a_row":0,"best_val_loss":2.5,"best_val_step":5,"loss_scale":1.0,
    "scaler_good_in_a_row":0,"scaler_skipped":1,"elapsed_s":3.0,"shards":2,
    "config":{"lr":0.001}})");
}

std::vector<std::byte> two_float_moments() {
  const float mv[4] = {1.0f, -2.0f, 0.5f, 0.25f};
  const auto b = std::as_bytes(std::span<const float>(mv));
  return {b.begin(), b.end()};
}

TEST(TrainState, FloatRoundTripsBitForBit) {
  for (bool with_best : {true, false}) {
    const TrainState<float> s = sample_state<float>(1000, with_best);
    expect_same(train::decode_train_state<float>(train::encode_train_state(s), "mem"), s);
    test::TempDir dir;
    const std::string path = dir.file("train_state.bin");
    train::save_train_state(path, s);
    expect_same(train::load_train_state<float>(path), s);
    EXPECT_EQ(read_bytes(path), train::encode_train_state(s));
  }
}

TEST(TrainState, DoubleRoundTripsBitForBit) {
  for (bool with_best : {false, true}) {
    const TrainState<double> s = sample_state<double>(777, with_best);
    test::TempDir dir;
    const std::string path = dir.file("train_state.bin");
    train::save_train_state(path, s);
    expect_same(train::load_train_state<double>(path), s);
  }
}

TEST(TrainState, EmptyMomentsRoundTrip) {
  const TrainState<float> s = sample_state<float>(0, true);
  expect_same(train::decode_train_state<float>(train::encode_train_state(s), "mem"), s);
}

TEST(TrainState, AwkwardDoublesRoundTripExactly) {
  std::vector<double> values = kAwkward;
  std::mt19937_64 rng(3);
  while (values.size() < 2000) {  // and any finite bit pattern at all
    const double x = std::bit_cast<double>(rng());
    if (std::isfinite(x)) values.push_back(x);
  }
  for (double x : values) {
    TrainState<double> s = sample_state<double>(2, true);
    s.loop.best_val_loss = x;
    s.loop.elapsed_s = std::fabs(x);
    if (x != 0) s.loop.loss_scale = std::fabs(x);
    s.config["x"] = x;
    s.config["list"] = {x, -x};
    const TrainState<double> back =
        train::decode_train_state<double>(train::encode_train_state(s), "mem");
    ASSERT_EQ(dbits(*back.loop.best_val_loss), dbits(x)) << x;
    ASSERT_EQ(dbits(back.loop.elapsed_s), dbits(std::fabs(x))) << x;
    ASSERT_EQ(dbits(back.loop.loss_scale), dbits(s.loop.loss_scale)) << x;
    ASSERT_EQ(dbits(back.config["x"].get<double>()), dbits(x)) << x;
    ASSERT_EQ(dbits(back.config["list"][1].get<double>()), dbits(-x)) << x;
  }
}

TEST(TrainState, LayoutIsTheDocumentedOne) {
  const TrainState<float> s = sample_state<float>(5, true);
  const std::vector<std::byte> b = train::encode_train_state(s);
  const auto u64 = [&](size_t at) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; --i) v = v << 8 | static_cast<uint8_t>(b[at + i]);
    return v;
  };
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(b.data()), 8), "TLMSTATE");
  EXPECT_EQ(u64(8) & 0xffffffffu, 1u);   // version
  EXPECT_EQ(u64(12) & 0xffffffffu, 1u);  // f32
  EXPECT_EQ(u64(16), 5u);
  const uint64_t json_bytes = u64(24);
  const std::string text(reinterpret_cast<const char*>(b.data()) + 32, json_bytes);
  const Json j = Json::parse(text);
  std::vector<std::string> keys;
  for (const auto& [k, v] : j.items()) keys.push_back(k);
  EXPECT_EQ(keys, (std::vector<std::string>{"arch", "step", "applied_steps", "tokens_seen",
                                            "bad_steps_in_a_row", "best_val_loss", "best_val_step",
                                            "loss_scale", "scaler_good_in_a_row", "scaler_skipped",
                                            "elapsed_s", "shards", "config", "files"}));
  const size_t offset = (32 + json_bytes + 63) / 64 * 64;
  for (size_t i = 32 + json_bytes; i < offset; ++i) EXPECT_EQ(b[i], std::byte{0}) << i;
  ASSERT_EQ(b.size(), offset + 2 * 5 * 4 + 4);
  EXPECT_EQ(std::memcmp(b.data() + offset, s.m.data(), 20), 0);
  EXPECT_EQ(std::memcmp(b.data() + offset + 20, s.v.data(), 20), 0);
  uint32_t stored = 0;
  for (int i = 3; i >= 0; --i) stored = stored << 8 | static_cast<uint8_t>(b[b.size() - 4 + i]);
  EXPECT_EQ(stored, io::crc32(std::span(b).first(b.size() - 4)));
}

TEST(TrainState, IndependentWriterAndCrcAgree) {
  const std::vector<std::byte> file = build_file(sample_json().dump(), 1, two_float_moments(), 2);
  const TrainState<float> s = train::decode_train_state<float>(file, "hand.bin");
  EXPECT_EQ(s.arch, "gpt2");
  EXPECT_EQ(s.loop.step, 10);
  EXPECT_EQ(s.loop.applied_steps, 9);
  EXPECT_EQ(*s.loop.best_val_loss, 2.5);
  EXPECT_EQ(s.shards, 2);
  EXPECT_EQ(s.config.dump(), R"({"lr":0.001})");
  EXPECT_EQ(s.m, (std::vector<float>{1.0f, -2.0f}));
  EXPECT_EQ(s.v, (std::vector<float>{0.5f, 0.25f}));
  // Writing it back gives the same bytes: the CRC is zlib's over every preceding byte.
  EXPECT_EQ(train::encode_train_state(s), file);
  // A state written before runs had shards (no "shards" key) is a one-shard run.
  Json old = sample_json();
  old.erase("shards");
  EXPECT_EQ(
      train::decode_train_state<float>(build_file(old.dump(), 1, two_float_moments(), 2), "old.bin")
          .shards,
      1);
}

TEST(TrainState, EveryTruncationIsAnErrorNamingTheFile) {
  const std::vector<std::byte> good = train::encode_train_state(sample_state<float>(5, true));
  for (size_t len = 0; len < good.size(); ++len) {
    SCOPED_TRACE(len);
    expect_error(
        [&] {
          train::decode_train_state<float>(std::span(good).first(len), "run/train_state.bin");
        },
        {"run/train_state.bin: "});
  }
  // Through a file too, at a few lengths, and trailing bytes.
  test::TempDir dir;
  const std::string path = dir.file("s.bin");
  for (size_t len : {size_t{0}, size_t{5}, size_t{8}, size_t{35}, good.size() - 1}) {
    write_bytes(path, std::span(good).first(len));
    expect_error([&] { train::load_train_state<float>(path); }, {path + ": "});
  }
  write_bytes(path, std::span(good).first(100));
  expect_error([&] { train::load_train_state<float>(path); }, {path + ": truncated"});
  std::vector<std::byte> longer = good;
  longer.push_back(std::byte{0});
  write_bytes(path, longer);
  expect_error([&] { train::load_train_state<float>(path); }, {path + ": ", "trailing bytes"});
}

TEST(TrainState, EveryFlippedByteIsAnErrorNamingTheFile) {
  const std::vector<std::byte> good = train::encode_train_state(sample_state<double>(4, true));
  for (size_t i = 0; i < good.size(); ++i) {
    std::vector<std::byte> bad = good;
    for (unsigned x = 1; x < 256; ++x) {
      bad[i] = good[i] ^ static_cast<std::byte>(x);
      try {
        train::decode_train_state<double>(bad, "x/train_state.bin");
        ADD_FAILURE() << "byte " << i << " ^ " << x << " not detected";
      } catch (const Error& e) {
        const std::string what = e.what();
        ASSERT_TRUE(what.starts_with("x/train_state.bin: ") && what.find('\n') == what.npos)
            << "byte " << i << " ^ " << x << ": " << what;
      }
    }
  }
  // Past the header, a flip is reported as what it is.
  std::vector<std::byte> bad = good;
  bad[good.size() - 20] ^= std::byte{1};
  expect_error([&] { train::decode_train_state<double>(bad, "s.bin"); },
               {"s.bin: checksum mismatch (file corrupt)"});
  bad = good;
  bad[40] ^= std::byte{1};  // inside the JSON
  expect_error([&] { train::decode_train_state<double>(bad, "s.bin"); },
               {"s.bin: checksum mismatch (file corrupt)"});
  bad = good;
  bad[0] = std::byte{'X'};
  expect_error([&] { train::decode_train_state<double>(bad, "s.bin"); }, {"s.bin: ", "bad magic"});
  bad = good;
  bad[8] = std::byte{2};
  expect_error([&] { train::decode_train_state<double>(bad, "s.bin"); },
               {"s.bin: unsupported training state version 2"});
}

TEST(TrainState, DtypeMustMatch) {
  test::TempDir dir;
  const std::string f32 = dir.file("f32.bin"), f64 = dir.file("f64.bin");
  train::save_train_state(f32, sample_state<float>(3, true));
  train::save_train_state(f64, sample_state<double>(3, true));
  expect_error([&] { train::load_train_state<double>(f32); },
               {f32 + ": moments are f32, expected f64"});
  expect_error([&] { train::load_train_state<float>(f64); },
               {f64 + ": moments are f64, expected f32"});
  std::vector<std::byte> bad = read_bytes(f32);
  bad[12] = std::byte{3};
  expect_error([&] { train::decode_train_state<float>(bad, "s.bin"); },
               {"s.bin: unknown moment dtype 3"});
}

TEST(TrainState, FileErrorsNameThePath) {
  test::TempDir dir;
  const std::string missing = dir.file("missing.bin");
  expect_error([&] { train::load_train_state<float>(missing); }, {missing + ": cannot open"});
  expect_error([&] { train::load_train_state<float>(dir.path().string()); },
               {dir.path().string() + ": not a regular file"});
  const std::string text = dir.file("text.bin");
  test::write_text(text, "this is not a training state at all, just text");
  expect_error([&] { train::load_train_state<float>(text); }, {text + ": ", "bad magic"});
}

TEST(TrainState, MalformedJsonFieldsAreErrors) {
  const auto moments = two_float_moments();
  const auto expect_bad = [&](const std::string& json, const std::string& phrase) {
    SCOPED_TRACE(json);
    expect_error(
        [&] { train::decode_train_state<float>(build_file(json, 1, moments, 2), "bad.bin"); },
        {"bad.bin: " + phrase});
  };
  const auto with = [](const char* key, Json value) {
    Json j = sample_json();
    j[key] = std::move(value);
    return j.dump();
  };
  const auto without = [](const char* key) {
    Json j = sample_json();
    j.erase(key);
    return j.dump();
  };
  for (const char* key : {"arch", "step", "applied_steps", "tokens_seen", "bad_steps_in_a_row",
                          "best_val_loss", "best_val_step", "loss_scale", "scaler_good_in_a_row",
                          "scaler_skipped", "elapsed_s", "config"})
    expect_bad(without(key), cat("state JSON lacks \"", key, "\""));
  expect_bad("[1, 2]", "state JSON is not an object");
  expect_bad("{\"arch\": ", "invalid JSON");
  expect_bad(R"({"arch":"a","arch":"b"})", "duplicate key 'arch'");
  expect_bad(with("arch", 3), "\"arch\" is not a string");
  expect_bad(with("arch", ""), "\"arch\" is empty");
  expect_bad(with("step", 1.5), "\"step\" is not an integer");
  expect_bad(with("step", "10"), "\"step\" is not an integer");
  expect_bad(with("tokens_seen", -1), "\"tokens_seen\" is negative (-1)");
  expect_bad(with("step", uint64_t{1} << 63), "\"step\" is out of range");
  expect_bad(with("applied_steps", 11), "\"applied_steps\" (11) exceeds \"step\" (10)");
  expect_bad(with("best_val_step", 11), "\"best_val_step\" (11) exceeds \"step\" (10)");
  expect_bad(with("loss_scale", "big"), "\"loss_scale\" is not a number");
  expect_bad(with("loss_scale", 0.0), "\"loss_scale\" (0) is not a positive finite number");
  expect_bad(with("elapsed_s", -1.0), "\"elapsed_s\" (-1) is not a non-negative finite number");
  expect_bad(with("best_val_loss", "low"), "\"best_val_loss\" is not a number");
  expect_bad(with("config", Json::array()), "\"config\" is not a JSON object");
  // Nonzero padding is refused even with a correct CRC.
  expect_error(
      [&] {
        train::decode_train_state<float>(build_file(sample_json().dump(), 1, moments, 2, 7),
                                         "bad.bin");
      },
      {"bad.bin: nonzero padding after the state JSON"});
  // Sizes in the header that overflow or disagree with the file.
  expect_error(
      [&] {
        train::decode_train_state<float>(
            build_file(sample_json().dump(), 1, moments, uint64_t{1} << 62), "bad.bin");
      },
      {"bad.bin: header sizes overflow"});
  expect_error(
      [&] {
        train::decode_train_state<float>(build_file(sample_json().dump(), 1, moments, 3),
                                         "bad.bin");
      },
      {"bad.bin: truncated"});
  // Integer-valued doubles and a null best loss are fine.
  Json j = sample_json();
  j["loss_scale"] = 4;
  j["best_val_loss"] = nullptr;
  j["unknown_future_key"] = true;
  const TrainState<float> s =
      train::decode_train_state<float>(build_file(j.dump(), 1, moments, 2), "ok.bin");
  EXPECT_EQ(s.loop.loss_scale, 4.0);
  EXPECT_FALSE(s.loop.best_val_loss.has_value());
}

TEST(TrainState, SaveRefusesAStateThatWouldNotLoad) {
  test::TempDir dir;
  const std::string path = dir.file("s.bin");
  const auto refused = [&](auto edit, const std::string& phrase) {
    TrainState<float> s = sample_state<float>(3, true);
    edit(s);
    expect_error([&] { train::save_train_state(path, s); }, {path + ": " + phrase});
    expect_error([&] { train::encode_train_state(s); }, {"training state: " + phrase});
    EXPECT_FALSE(std::filesystem::exists(path));
  };
  refused([](auto& s) { s.v.pop_back(); }, "moment vectors differ in size (m 3, v 2)");
  refused([](auto& s) { s.loop.step = -1; }, "\"step\" is negative");
  refused([](auto& s) { s.shards = 0; }, "\"shards\"");
  refused([](auto& s) { s.loop.applied_steps = s.loop.step + 1; },
          "\"applied_steps\" (1235) exceeds \"step\" (1234)");
  refused([](auto& s) { s.loop.loss_scale = std::nan(""); }, "\"loss_scale\"");
  refused([](auto& s) { s.loop.best_val_loss = INFINITY; }, "\"best_val_loss\" is not finite");
  refused([](auto& s) { s.config = nullptr; }, "\"config\" is not a JSON object");
  refused([](auto& s) { s.arch.clear(); }, "\"arch\" is empty");
  refused([](auto& s) { s.config["bad"] = std::string("\xff\xfe"); },
          "cannot write the state as JSON");
}

// What is in dir besides the expected names (temporary files left behind, say).
std::vector<std::string> entries(const std::filesystem::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) out.push_back(e.path().filename());
  std::sort(out.begin(), out.end());
  return out;
}

TEST(TrainState, AFailedSaveLeavesTheOldFile) {
  test::TempDir dir;
  const std::string path = dir.file("train_state.bin");
  const TrainState<float> old_state = sample_state<float>(10, true);
  train::save_train_state(path, old_state);
  const std::vector<std::byte> old_bytes = read_bytes(path);
  TrainState<float> next = sample_state<float>(1 << 16, false);  // 512 KiB of moments
  next.loop.step = 2000;

  // A write that fails midway (the file size limit stands in for a full disk).
  struct rlimit saved {};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &saved), 0);
  const auto old_handler = ::signal(SIGXFSZ, SIG_IGN);  // EFBIG instead of a signal
  struct rlimit small = saved;
  small.rlim_cur = 100000;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  try {
    train::save_train_state(path, next);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(path + ": "), std::string::npos) << e.what();
  }
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &saved), 0);
  ::signal(SIGXFSZ, old_handler);
  EXPECT_EQ(read_bytes(path), old_bytes);
  EXPECT_EQ(entries(dir.path()), std::vector<std::string>{"train_state.bin"});

  // Something at the temporary name older versions used is neither in the way nor touched:
  // the temporary file's name is fresh (io/atomic_file.h).
  const std::string blocker = path + ".tmp." + std::to_string(::getpid());
  std::filesystem::create_directory(blocker);
  train::save_train_state(path, old_state);
  EXPECT_TRUE(std::filesystem::is_directory(blocker));
  std::filesystem::remove(blocker);
  EXPECT_EQ(read_bytes(path), old_bytes);
  expect_same(train::load_train_state<float>(path), old_state);

  // A missing directory.
  const std::string nowhere = dir.file("no/such/dir/train_state.bin");
  expect_error([&] { train::save_train_state(nowhere, next); }, {nowhere + ": cannot write"});

  // And a save that succeeds replaces the file whole.
  train::save_train_state(path, next);
  expect_same(train::load_train_state<float>(path), next);
  EXPECT_EQ(entries(dir.path()), std::vector<std::string>{"train_state.bin"});
}

}  // namespace TINYLM_TEST_LOCAL
}  // namespace tinylm
