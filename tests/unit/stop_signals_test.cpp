// The training commands' SIGINT / SIGTERM (apps/tinylm/stop_signals.h): blocked in every thread
// started after StopSignals (the computing ones), the first asks to stop, and everything is
// put back afterwards.
#include "stop_signals.h"

#include <gtest/gtest.h>
#include <pthread.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <thread>

namespace TINYLM_TEST_LOCAL {

bool blocks(int sig) {
  sigset_t mask;
  pthread_sigmask(SIG_BLOCK, nullptr, &mask);
  return sigismember(&mask, sig) == 1;
}

TEST(StopSignals, ComputingThreadsBlockThemAndTheFirstAsksToStop) {
  // On a thread of its own: the test runner's own mask stays as it was.
  std::thread command([] {
    {
      const tinylm::cli::StopSignals stop;
      EXPECT_TRUE(blocks(SIGINT) && blocks(SIGTERM));
      bool worker_blocks = false;
      std::thread worker([&] { worker_blocks = blocks(SIGINT) && blocks(SIGTERM); });
      worker.join();
      EXPECT_TRUE(worker_blocks);
      EXPECT_FALSE(stop.requested());
      kill(getpid(), SIGTERM);
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      while (!stop.requested() && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      EXPECT_TRUE(stop.requested());
      EXPECT_EQ(stop.exit_code(), 143);
    }
    EXPECT_FALSE(blocks(SIGINT) || blocks(SIGTERM));
    struct sigaction sa {};
    sigaction(SIGTERM, nullptr, &sa);
    EXPECT_EQ(sa.sa_handler, SIG_DFL);
  });
  command.join();
}

}  // namespace TINYLM_TEST_LOCAL
