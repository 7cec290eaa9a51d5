#pragma once
// SIGINT and SIGTERM for the training commands, which stop cleanly on them: the first asks the
// run to stop (it saves and returns), a second ends the process at once.
//
// No handler may run on a computing thread: one that interrupted oneDNN's JIT-compiled gemm
// was followed by a corrupted heap ("corrupted size vs. prev_size", "free(): invalid pointer")
// in about one interrupted run in ten (scripts/interrupt_stress.sh). So the signals are blocked
// in the thread that constructs StopSignals, and with it in every thread that thread starts
// afterwards (OpenMP's team included), and caught by an idle thread of their own.
#include <condition_variable>
#include <csignal>
#include <mutex>
#include <thread>

namespace tinylm::cli {

class StopSignals {
 public:
  // Construct before the command starts any thread.
  StopSignals();
  // Restores the dispositions and this thread's mask (a signal after this ends the process).
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  bool requested() const;  // a first signal came
  int exit_code() const;   // for a stopped run: kExitInterrupted, or kExitTerminated for SIGTERM

 private:
  struct sigaction old_int_ {};
  struct sigaction old_term_ {};
  sigset_t old_mask_{};
  std::mutex mutex_;
  std::condition_variable done_cv_;
  bool done_ = false;  // the catcher may end
  std::thread catcher_;
};

}  // namespace tinylm::cli
