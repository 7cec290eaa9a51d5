// `tinylm train --arch microgpt` with microgpt's settings (its defaults) is microgpt.py: the
// same loss at every one of the 1,000 steps as microgpt.py printed them
// (tests/fixtures/microgpt/default_run.txt), and bit for bit the losses of `tinylm microgpt`.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "test_util.h"
#include "tinylm/train/microgpt_run.h"

namespace tinylm::test {
namespace TINYLM_TEST_LOCAL {

using json = nlohmann::json;

TEST(TrainMicrogpt, ReproducesMicrogptPyLosses) {
  TempDir tmp;
  const std::string run = tmp.file("run");
  const CommandResult r = run_cli("train --arch microgpt --data " + source_path("data/names.txt") +
                                  " --eval-every 0 --out " + run);
  ASSERT_EQ(r.exit_code, 0) << r.err;

  std::vector<double> losses;
  std::istringstream metrics(read_text(run + "/metrics.jsonl"));
  for (std::string line; std::getline(metrics, line);) {
    const json j = json::parse(line);
    if (j["type"] == "step") losses.push_back(j["loss"].get<double>());
  }
  ASSERT_EQ(losses.size(), 1000u);

  std::istringstream printed(read_text(source_path("tests/fixtures/microgpt/default_run.txt")));
  size_t i = 0;
  for (std::string line; std::getline(printed, line);) {
    if (line.rfind("step", 0) != 0) continue;
    char mine[64];
    std::snprintf(mine, sizeof mine, "step %4zu / 1000 | loss %.4f", i + 1, losses[i]);
    EXPECT_EQ(line, mine);
    ++i;
  }
  EXPECT_EQ(i, 1000u);

  std::ostringstream sink;
  train::MicrogptOptions opt;
  opt.data_path = source_path("data/names.txt");
  opt.samples = 0;
  const train::MicrogptResult direct = train::run_microgpt(opt, sink);
  EXPECT_EQ(direct.losses, losses);
}

}  // namespace TINYLM_TEST_LOCAL
}  // namespace tinylm::test
