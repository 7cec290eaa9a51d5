// The training progress line: on a terminal it is cut to the terminal's width less one column,
// so it never wraps; piped, it is printed whole.
#include "tinylm/train/progress.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

namespace tinylm::train {
namespace TINYLM_TEST_LOCAL {

TEST(ProgressLine, FitsTheGivenWidthLessOneColumn) {
  const std::string line(100, 'x');
  EXPECT_EQ(fit_to_columns(line, 80), std::string(79, 'x'));
  EXPECT_EQ(fit_to_columns(line, 101), line);
  EXPECT_EQ(fit_to_columns(line, 100), std::string(99, 'x'));
  EXPECT_EQ(fit_to_columns("short", 80), "short");
  EXPECT_EQ(fit_to_columns(line, 1), "");
  EXPECT_EQ(fit_to_columns(line, 0), line);  // unknown width: as it is
}

// What Progress writes for one step, on a terminal of `columns` or piped.
std::string step_output(bool terminal, int columns) {
  std::FILE* f = std::tmpfile();
  EXPECT_NE(f, nullptr);
  Progress p(f, terminal, 1000, 1, columns);
  StepRecord r;
  r.step = 7;
  r.loss = 2.5;
  r.lr = 1e-3;
  r.step_tokens = 4096;
  r.step_s = 0.5;
  r.elapsed_s = 3.5;
  p.step(r, 0.25);
  std::fflush(f);
  std::rewind(f);
  std::string out;
  for (int c; (c = std::fgetc(f)) != EOF;) out += static_cast<char>(c);
  std::fclose(f);
  return out;
}

TEST(ProgressLine, StepLineIsCutOnATerminalAndWholeWhenPiped) {
  const std::string whole =
      "step 7/1000 | loss 2.5000 | lr 0.001 | 8192 tok/s | MFU 25% | ETA 0:08:17";
  EXPECT_EQ(step_output(false, 30), whole + "\n");
  EXPECT_EQ(step_output(true, 30), "\r\033[K" + whole.substr(0, 29));
  EXPECT_EQ(step_output(true, 200), "\r\033[K" + whole);
}

TEST(ProgressLine, TerminalColumnsFallsBackToColumnsVariable) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);  // not a terminal: TIOCGWINSZ fails
  const char* saved = std::getenv("COLUMNS");
  const std::string keep = saved != nullptr ? saved : "";
  ::setenv("COLUMNS", "123", 1);
  EXPECT_EQ(terminal_columns(fds[0]), 123);
  ::setenv("COLUMNS", "wide", 1);
  EXPECT_EQ(terminal_columns(fds[0]), 0);
  ::unsetenv("COLUMNS");
  EXPECT_EQ(terminal_columns(fds[0]), 0);
  if (saved != nullptr) ::setenv("COLUMNS", keep.c_str(), 1);
  ::close(fds[0]);
  ::close(fds[1]);
}

}  // namespace TINYLM_TEST_LOCAL
}  // namespace tinylm::train
