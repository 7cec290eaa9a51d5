#include "stop_signals.h"

#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>

#include "cli_util.h"

namespace tinylm::cli {
namespace {

std::atomic<int> g_signal{0};  // the first signal, or 0 (the handler's only state)

extern "C" void on_stop_signal(int sig) {
  int none = 0;
  if (!g_signal.compare_exchange_strong(none, sig)) std::_Exit(128 + sig);  // a second: out now
}

sigset_t stop_set() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  return set;
}

}  // namespace

StopSignals::StopSignals() {
  g_signal.store(0);
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGINT, &sa, &old_int_);
  sigaction(SIGTERM, &sa, &old_term_);
  const sigset_t set = stop_set();
  pthread_sigmask(SIG_BLOCK, &set, &old_mask_);
  // The one thread with the signals unblocked (besides any started before, e.g. MPI's, which do
  // not compute either): process-directed signals are delivered to it.
  catcher_ = std::thread([this, set] {
    pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
    std::unique_lock lock(mutex_);
    done_cv_.wait(lock, [this] { return done_; });
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
  });
}

StopSignals::~StopSignals() {
  {
    const std::lock_guard lock(mutex_);
    done_ = true;
  }
  done_cv_.notify_all();
  catcher_.join();
  sigaction(SIGINT, &old_int_, nullptr);
  sigaction(SIGTERM, &old_term_, nullptr);
  pthread_sigmask(SIG_SETMASK, &old_mask_, nullptr);
}

bool StopSignals::requested() const { return g_signal.load() != 0; }

int StopSignals::exit_code() const {
  return g_signal.load() == SIGTERM ? kExitTerminated : kExitInterrupted;
}

}  // namespace tinylm::cli
