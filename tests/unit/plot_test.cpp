// tinylm plot: reading metrics.jsonl, the axis ticks, the smoothing, and the SVG figure.
#include "tinylm/report/plot.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <random>
#include <utility>

#include "test_util.h"
#include "tinylm/core/utf8.h"

namespace tinylm::report {
namespace TINYLM_TEST_LOCAL {

using test::expect_error;

std::vector<int64_t> steps(const std::vector<LossPoint>& points) {
  std::vector<int64_t> out;
  for (const LossPoint& p : points) out.push_back(p.step);
  return out;
}

// A "step" line of metrics.jsonl.
std::string step_line(int64_t step, double loss) {
  return cat("{\"type\":\"step\",\"step\":", step, ",\"loss\":", loss, "}\n");
}

// ---- Reading ----

TEST(PlotMetrics, ReadsStepAndEvalLinesAndIgnoresOtherTypes) {
  const RunCurves r = parse_run_metrics(
      "{\"type\":\"run\",\"model\":\"gpt2\"}\n"
      "{\"type\":\"step\",\"step\":1,\"loss\":3.5,\"lr\":0.001,\"grad_norm\":null,\"mfu\":0.4}\n"
      "\n"
      "{\"type\":\"step\",\"step\":2,\"loss\":null,\"skipped\":true}\n"
      "{\"type\":\"step\",\"step\":3,\"loss\":3}\n"
      "{\"type\":\"checkpoint\",\"path\":\"step-00000003\"}\n"
      "{\"type\":\"eval\",\"step\":3,\"val_loss\":3.25,\"best_val_loss\":3.25}\n"
      "{\"type\":\"eval\",\"step\":4,\"val_loss\":null}\n",
      "m.jsonl");
  EXPECT_EQ(steps(r.train), (std::vector<int64_t>{1, 3}));  // null skipped
  EXPECT_EQ(r.train[0].loss, 3.5);
  EXPECT_EQ(r.train[1].loss, 3.0);
  ASSERT_EQ(r.val.size(), 1u);
  EXPECT_EQ(r.val[0].step, 3);
  EXPECT_EQ(r.val[0].loss, 3.25);
}

TEST(PlotMetrics, MalformedLinesNameTheFileAndLine) {
  const std::string ok = "{\"type\":\"step\",\"step\":1,\"loss\":3}\n";
  const auto expect = [&](const std::string& line, const std::string& problem) {
    SCOPED_TRACE(line);
    expect_error([&] { parse_run_metrics(ok + ok + line + "\n" + ok, "RUN/metrics.jsonl"); },
                 {"RUN/metrics.jsonl:3: " + problem});
  };
  expect("{\"type\":\"step\",\"step\":2,\"loss\":", "not JSON");
  expect("loss 3.2", "not JSON");
  expect("[1, 2]", "not a JSON object");
  expect("{\"step\":2,\"loss\":3}", "no \"type\"");
  expect("{\"type\":\"step\",\"loss\":3}", "no \"step\"");
  expect("{\"type\":\"eval\",\"val_loss\":3}", "no \"step\"");
  expect("{\"type\":\"step\",\"step\":-1,\"loss\":3}", "\"step\" is not an integer");
  expect("{\"type\":\"step\",\"step\":2.5,\"loss\":3}", "\"step\" is not an integer");
  expect("{\"type\":\"step\",\"step\":2}", "no \"loss\"");
  expect("{\"type\":\"eval\",\"step\":2,\"loss\":3}", "no \"val_loss\"");
  expect("{\"type\":\"step\",\"step\":2,\"loss\":\"3\"}", "\"loss\" is not a number");
  expect("{\"type\":\"step\",\"step\":2,\"loss\":3,\"loss\":4}", "duplicate key");
  // Unknown types need nothing but their type.
  EXPECT_NO_THROW(parse_run_metrics(ok + "{\"type\":\"note\"}\n", "m"));
}

TEST(PlotMetrics, AnEmptyFileIsAnError) {
  expect_error([] { parse_run_metrics("", "RUN/metrics.jsonl"); }, {"RUN/metrics.jsonl: empty"});
  expect_error([] { parse_run_metrics("\n  \n", "m.jsonl"); }, {"m.jsonl: empty"});
}

TEST(PlotMetrics, AnUnterminatedLastLineIsBeingWritten) {
  const std::string text =
      "{\"type\":\"step\",\"step\":1,\"loss\":3}\n{\"type\":\"step\",\"step\":2,\"lo";
  EXPECT_EQ(parse_run_metrics(text, "m").train.size(), 1u);
  expect_error([&] { parse_run_metrics(text + "\n", "m"); }, {"m:2: not JSON"});
  // A complete last line without its newline still counts.
  EXPECT_EQ(parse_run_metrics(text + "ss\":2}", "m").train.size(), 2u);
}

TEST(PlotMetrics, AResumeReplacesTheStepsAfterItsCheckpoint) {
  std::string text;
  for (int s : {1, 2, 3, 4, 5}) text += step_line(s, 10.0);
  for (int s : {3, 4, 5, 6}) text += step_line(s, 20.0);
  const RunCurves r = parse_run_metrics(text, "m");
  EXPECT_EQ(steps(r.train), (std::vector<int64_t>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(r.train[1].loss, 10.0);
  EXPECT_EQ(r.train[2].loss, 20.0);
}

TEST(PlotMetrics, ReadsARunDirectoryOrAFile) {
  test::TempDir dir;
  const std::filesystem::path run = dir.path() / "run-a";
  std::filesystem::create_directories(run);
  test::write_text((run / "metrics.jsonl").string(), "{\"type\":\"step\",\"step\":1,\"loss\":3}\n");
  test::write_text(dir.file("other.jsonl"), "{\"type\":\"eval\",\"step\":1,\"val_loss\":3}\n");
  EXPECT_EQ(read_run_metrics(run.string()).name, "run-a");
  EXPECT_EQ(read_run_metrics(run.string() + "/").name, "run-a");
  EXPECT_EQ(read_run_metrics((run / "metrics.jsonl").string()).name, "run-a");
  EXPECT_EQ(read_run_metrics((run / "metrics.jsonl").string()).train.size(), 1u);
  EXPECT_EQ(read_run_metrics(dir.file("other.jsonl")).name, "other");
  expect_error([&] { read_run_metrics(dir.file("missing")); }, {"missing", "cannot open"});
  std::filesystem::create_directories(dir.path() / "no-metrics");
  expect_error([&] { read_run_metrics(dir.file("no-metrics")); },
               {"no-metrics/metrics.jsonl", "cannot open"});
}

// ---- Ticks and smoothing ----

// The 1, 2 or 5 times a power of ten nearest x, or 0 when x is not close to one.
double nice_value(double x) {
  const int e = static_cast<int>(std::floor(std::log10(x) + 1e-6));
  for (double m : {1.0, 2.0, 5.0}) {
    const double v = e < 0 ? m / std::pow(10.0, -e) : m * std::pow(10.0, e);
    if (std::abs(x - v) < 1e-6 * v) return v;
  }
  return 0;
}

TEST(PlotTicks, NiceTicksAreRoundAndCoverTheRange) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(-3, 5);
  for (int i = 0; i < 2000; ++i) {
    const double lo = (u(rng) > 1 ? 1 : -1) * std::pow(10.0, u(rng));
    const double hi = lo + std::pow(10.0, u(rng));
    const int target = 3 + i % 10;
    const std::vector<double> t = nice_ticks(lo, hi, target);
    SCOPED_TRACE(testing::Message() << lo << " .. " << hi << " target " << target);
    ASSERT_GE(t.size(), 2u);
    EXPECT_LE(t.size(), static_cast<size_t>(2 * target + 2));
    const double spacing = nice_value(t[1] - t[0]);
    ASSERT_NE(spacing, 0) << t[1] - t[0];
    EXPECT_GE(t.front(), lo - 1e-9 * spacing);
    EXPECT_LE(t.back(), hi + 1e-9 * spacing);
    EXPECT_LT(t.front() - lo, spacing * (1 + 1e-9));  // no gap of a whole step at the ends
    EXPECT_LT(hi - t.back(), spacing * (1 + 1e-9));
    for (size_t k = 1; k < t.size(); ++k) {
      EXPECT_NEAR(t[k] - t[k - 1], spacing, 1e-6 * spacing);
      EXPECT_NEAR(t[k] / spacing, std::round(t[k] / spacing), 1e-6);  // multiples of it
    }
  }
  EXPECT_EQ(nice_ticks(2.9, 8.7, 6), (std::vector<double>{3, 4, 5, 6, 7, 8}));
  EXPECT_EQ(nice_ticks(0, 2000, 5), (std::vector<double>{0, 500, 1000, 1500, 2000}));
  EXPECT_EQ(nice_ticks(0, 2, 8, 1), (std::vector<double>{0, 1, 2}));  // whole steps
  EXPECT_EQ(nice_ticks(3.3, 3.3, 5), (std::vector<double>{3.3}));
  EXPECT_EQ(nice_ticks(-0.3, 0.3, 3), (std::vector<double>{-0.2, 0, 0.2}));
}

TEST(PlotTicks, LogTicks) {
  EXPECT_EQ(log_ticks(0.01, 200, 6), (std::vector<double>{0.01, 0.1, 1, 10, 100}));
  EXPECT_EQ(log_ticks(0.5, 15, 6), (std::vector<double>{0.5, 1, 2, 5, 10}));
  EXPECT_EQ(log_ticks(2.9, 11, 6), (std::vector<double>{3, 4, 5, 6, 7, 8, 9, 10}));
  // Less than a decade with under three 1..9 ticks: a linear 1-2-5 spacing.
  const std::vector<double> narrow = log_ticks(3.05, 3.8, 5);
  ASSERT_GE(narrow.size(), 3u);
  EXPECT_NE(nice_value(narrow[1] - narrow[0]), 0);
  EXPECT_GE(narrow.front(), 3.05);
  EXPECT_LE(narrow.back(), 3.8);
}

TEST(PlotSmooth, KeepsConstantsAndLinesAndDoesNotLag) {
  std::vector<LossPoint> flat, line, noisy;
  std::mt19937_64 rng(1);
  std::normal_distribution<double> noise(0, 0.2);
  for (int64_t s = 1; s <= 400; ++s) {
    flat.push_back({s, 3.0});
    line.push_back({s, 10.0 - 0.01 * static_cast<double>(s)});
    noisy.push_back({s, 3.0 + noise(rng)});
  }
  for (const LossPoint& p : smooth_curve(flat, 20)) EXPECT_NEAR(p.loss, 3.0, 1e-12);
  // A two-sided average follows a falling line away from the ends (a one-sided one would
  // trail it by steps * slope = 0.2).
  const std::vector<LossPoint> sl = smooth_curve(line, 20);
  for (size_t i = 150; i < 250; ++i) EXPECT_NEAR(sl[i].loss, line[i].loss, 1e-3);
  const std::vector<LossPoint> sn = smooth_curve(noisy, 20);
  double worst = 0;
  for (size_t i = 0; i < sn.size(); ++i) worst = std::max(worst, std::abs(sn[i].loss - 3.0));
  EXPECT_LT(worst, 0.25);  // raw points stray up to 0.7
  EXPECT_EQ(steps(sn), steps(noisy));
  EXPECT_EQ(smooth_curve(noisy, 0)[5].loss, noisy[5].loss);
}

// ---- The figure ----

// A small well-formedness check: tags balance, attributes are quoted, and text holds no
// bare '<' or unknown entity. Returns "" or the first problem.
std::string xml_problem(const std::string& s) {
  std::vector<std::string> open;
  size_t i = 0;
  const auto entity_ok = [&](size_t at) {
    for (const char* e : {"&amp;", "&lt;", "&gt;", "&quot;", "&apos;"}) {
      if (s.compare(at, std::strlen(e), e) == 0) return true;
    }
    return false;
  };
  if (s.rfind("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n", 0) != 0) return "no XML declaration";
  i = s.find('\n') + 1;
  while (i < s.size()) {
    if (s[i] == '&' && !entity_ok(i)) return "bare & at " + std::to_string(i);
    if (s[i] == '>') return "bare > at " + std::to_string(i);
    if (s[i] != '<') {
      ++i;
      continue;
    }
    bool in_quote = false;
    size_t j = i + 1;
    for (; j < s.size() && (in_quote || s[j] != '>'); ++j) {
      if (s[j] == '"') in_quote = !in_quote;
      if (in_quote && s[j] == '<') return "< in an attribute at " + std::to_string(j);
      if (in_quote && s[j] == '&' && !entity_ok(j)) return "bare & in an attribute";
    }
    if (j == s.size()) return "unterminated tag";
    const std::string tag = s.substr(i + 1, j - i - 1);
    const bool closing = tag[0] == '/', empty = tag.back() == '/';
    const std::string name = tag.substr(closing, tag.find_first_of(" />", closing) - closing);
    if (name.empty()) return "tag without a name at " + std::to_string(i);
    if (closing) {
      if (open.empty() || open.back() != name) return "unbalanced </" + name + ">";
      open.pop_back();
    } else if (!empty) {
      open.push_back(name);
    }
    i = j + 1;
  }
  if (!open.empty()) return "unclosed <" + open.back() + ">";
  size_t bad = 0;
  if (!is_valid_utf8(s, &bad)) return "invalid UTF-8 at " + std::to_string(bad);
  return "";
}

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

// A decaying curve over `n` steps with noise, eval every 100 steps.
RunCurves run(const std::string& name, int64_t n, double noise, uint64_t seed) {
  RunCurves r{name, {}, {}};
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> d(0, noise);
  for (int64_t s = 1; s <= n; ++s) {
    const double base = 3.2 + 7.7 * std::exp(-static_cast<double>(s) / 120);
    r.train.push_back({s, base + (noise > 0 ? d(rng) : 0)});
    if (s % 100 == 0) r.val.push_back({s, base + 0.05});
  }
  return r;
}

TEST(PlotSvg, SeveralRunsWithEscapedNames) {
  const std::vector<RunCurves> runs = {run("lr <3e-4> & \"wd\"", 2000, 0.12, 1),
                                       run("baseline", 2000, 0.12, 2)};
  const std::string svg = render_loss_svg(runs, {});
  EXPECT_EQ(xml_problem(svg), "");
  EXPECT_NE(svg.find("lr &lt;3e-4&gt; &amp; &quot;wd&quot;"), std::string::npos);
  EXPECT_EQ(svg.find("<3e-4>"), std::string::npos);
  EXPECT_NE(svg.find(">baseline</text>"), std::string::npos);
  EXPECT_NE(svg.find("Training and validation loss"), std::string::npos);
  EXPECT_NE(svg.find(">step</text>"), std::string::npos);
  EXPECT_NE(svg.find(">loss</text>"), std::string::npos);
  for (const char* colour : {"#0072B2", "#D55E00"}) EXPECT_NE(svg.find(colour), std::string::npos);
  // One marker per validation point, plus the legend's.
  EXPECT_EQ(count(svg, "r=\"3.5\""), 2 * 20u + 1);
  // Noisy curves are smoothed, and the legend says so; the first huge losses are cut off, but
  // no validation marker is (the plot area starts at y = 44).
  EXPECT_NE(svg.find("train, smoothed"), std::string::npos);
  EXPECT_NE(svg.find("train points"), std::string::npos);
  for (size_t p = svg.find("r=\"3.5\""); p != std::string::npos; p = svg.find("r=\"3.5\"", p + 1)) {
    const size_t cy = svg.rfind("cy=\"", p);
    EXPECT_GE(std::stod(svg.substr(cy + 4)), 44.0 - 1e-9);
  }
}

TEST(PlotSvg, SmoothsOnlyNoisyCurvesUnlessAsked) {
  const std::vector<RunCurves> smooth = {run("a", 2000, 0, 1)};
  const std::string plain = render_loss_svg(smooth, {});
  EXPECT_EQ(plain.find("smoothed"), std::string::npos);
  EXPECT_EQ(xml_problem(plain), "");
  PlotOptions forced;
  forced.smooth_steps = 50;
  EXPECT_NE(render_loss_svg(smooth, forced).find("smoothing: 50 steps"), std::string::npos);
  PlotOptions off;
  off.smooth_steps = 0;
  const std::vector<RunCurves> noisy = {run("a", 2000, 0.2, 1)};
  EXPECT_EQ(render_loss_svg(noisy, off).find("smoothed"), std::string::npos);
  EXPECT_NE(render_loss_svg(noisy, {}).find("smoothing: 20 steps"), std::string::npos);
}

TEST(PlotSvg, LogAxisSkipsLossesAtOrBelowZero) {
  RunCurves r = run("a", 300, 0, 1);
  r.train[10].loss = 0;
  PlotOptions o;
  o.log_y = true;
  o.title = "Log & title";
  const std::string svg = render_loss_svg(std::vector<RunCurves>{r}, o);
  EXPECT_EQ(xml_problem(svg), "");
  EXPECT_NE(svg.find("loss (log scale)"), std::string::npos);
  EXPECT_NE(svg.find("1 loss &lt;= 0"), std::string::npos);
  EXPECT_NE(svg.find("<title>Log &amp; title</title>"), std::string::npos);
  EXPECT_EQ(svg.find("nan"), std::string::npos);
  EXPECT_EQ(svg.find("inf"), std::string::npos);
  // Ticks 4 .. 10 (a range under a decade), each labelled by its digits.
  for (const char* label : {">4</text>", ">5</text>", ">10</text>"}) {
    EXPECT_NE(svg.find(label), std::string::npos) << label;
  }
}

TEST(PlotSvg, SinglePointsEmptyRunsAndBadInput) {
  const std::vector<RunCurves> runs = {
      {"one", {{1, 3.3}}, {}}, {"val-only", {}, {{1, 3.4}}}, {"nothing", {}, {}}};
  const std::string svg = render_loss_svg(runs, {});
  EXPECT_EQ(xml_problem(svg), "");
  EXPECT_NE(svg.find("r=\"2.5\""), std::string::npos);  // the lone train point is a dot
  EXPECT_NE(svg.find("nothing (no data)"), std::string::npos);
  EXPECT_EQ(svg.find("nan"), std::string::npos);
  expect_error(
      [] {
        render_loss_svg(std::vector<RunCurves>{{"a", {}, {}}}, {});
      },
      {"no loss to draw in a"});
  PlotOptions tiny;
  tiny.width = 100;
  expect_error([&] { render_loss_svg(runs, tiny); }, {"at least 480 x 300"});
}

TEST(PlotSvg, ControlCharactersAndBadUtf8InNamesStayValidXml) {
  const std::vector<RunCurves> runs = {{std::string("bad\xff\x01name"), {{1, 3.0}, {2, 2.5}}, {}}};
  const std::string svg = render_loss_svg(runs, {});
  EXPECT_EQ(xml_problem(svg), "");
  EXPECT_NE(svg.find("bad\uFFFD\uFFFDname"), std::string::npos);
}

TEST(PlotSvg, ManyRunsAndLongRuns) {
  std::vector<RunCurves> runs;
  for (int i = 0; i < 10; ++i) runs.push_back(run("run-" + std::to_string(i), 500, 0.05, i));
  runs[3].name = std::string(200, 'x');  // shortened in the legend, whole in its tooltip
  std::string svg = render_loss_svg(runs, {});
  EXPECT_EQ(xml_problem(svg), "");
  EXPECT_NE(svg.find("\u2026"), std::string::npos);
  EXPECT_NE(svg.find("<title>" + std::string(200, 'x') + "</title>"), std::string::npos);
  EXPECT_NE(svg.find("stroke-dasharray=\"1 3\""), std::string::npos);  // the ninth run on
  // 100,000 steps: labelled in thousands, and the line reduced to a few points per pixel.
  svg = render_loss_svg(std::vector<RunCurves>{run("long", 100000, 0.1, 1)}, {});
  EXPECT_EQ(xml_problem(svg), "");
  EXPECT_NE(svg.find(">100k</text>"), std::string::npos);
  EXPECT_LT(svg.size(), 200000u);
}

TEST(PlotCli, WritesTheFigureAndReportsBadLines) {
  test::TempDir dir;
  std::filesystem::create_directories(dir.path() / "a");
  std::string text;
  for (const LossPoint& p : run("a", 300, 0.1, 1).train) text += step_line(p.step, p.loss);
  test::write_text(dir.file("a/metrics.jsonl"), text);
  const test::CommandResult ok =
      test::run_cli("plot " + dir.file("a") + " --log-y --out " + dir.file("f.svg"));
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_EQ(xml_problem(test::read_text(dir.file("f.svg"))), "");
  test::write_text(dir.file("b.jsonl"), text + "oops\n");
  const test::CommandResult bad =
      test::run_cli("plot " + dir.file("b.jsonl") + " --out " + dir.file("g.svg"));
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("b.jsonl:301: not JSON"), std::string::npos) << bad.err;
  EXPECT_FALSE(std::filesystem::exists(dir.file("g.svg")));
}

// A PNG's width and height, from its IHDR chunk (big-endian, right after the signature and the
// chunk's length and type); fails the test when the bytes do not start as a PNG does.
std::pair<uint32_t, uint32_t> png_size(const std::string& png) {
  const std::string signature = "\x89PNG\r\n\x1a\n";
  EXPECT_EQ(png.substr(0, 8), signature);
  EXPECT_EQ(png.substr(12, 4), "IHDR");
  const auto be32 = [&](size_t at) {
    uint32_t v = 0;
    for (size_t i = 0; i < 4; ++i) v = v << 8 | static_cast<unsigned char>(png[at + i]);
    return v;
  };
  return {be32(16), be32(20)};
}

TEST(PlotCli, WritesPngForDotPngAndRefusesUnknownTypes) {
  test::TempDir dir;
  std::string text;
  for (const LossPoint& p : run("a", 50, 0.1, 1).train) text += step_line(p.step, p.loss);
  test::write_text(dir.file("a.jsonl"), text);
  const std::string plot = "plot " + dir.file("a.jsonl") + " --width 640 --height 400 --out ";
  const test::CommandResult png = test::run_cli(plot + dir.file("f.png"));
  ASSERT_EQ(png.exit_code, 0) << png.err;
  const std::string bytes = test::read_text(dir.file("f.png"));
  ASSERT_GT(bytes.size(), 24u);
  EXPECT_EQ(png_size(bytes), std::make_pair(640u, 400u));
  const test::CommandResult svg = test::run_cli(plot + dir.file("f.svg"));
  ASSERT_EQ(svg.exit_code, 0) << svg.err;
  EXPECT_NE(bytes, test::read_text(dir.file("f.svg")));
  EXPECT_EQ(xml_problem(test::read_text(dir.file("f.svg"))), "");
  // The same figure again: the same pixels, the same bytes.
  ASSERT_EQ(test::run_cli(plot + dir.file("g.png")).exit_code, 0);
  EXPECT_EQ(test::read_text(dir.file("g.png")), bytes);

  const test::CommandResult jpg = test::run_cli(plot + dir.file("f.jpg"));
  EXPECT_EQ(jpg.exit_code, 2);
  EXPECT_NE(jpg.err.find("unknown image type .jpg (use .svg or .png)"), std::string::npos)
      << jpg.err;
  EXPECT_FALSE(std::filesystem::exists(dir.file("f.jpg")));
}

}  // namespace TINYLM_TEST_LOCAL
}  // namespace tinylm::report
