#include "util/held_signals.h"

namespace autopar {

namespace {

volatile std::sig_atomic_t lastSignal = 0;
int depth = 0;  ///< holds alive (holds are made and ended on one thread)

extern "C" void recordSignal(int signal) { lastSignal = signal; }

}  // namespace

HeldSignals::HeldSignals(std::initializer_list<int> signals, OnRelease release)
    : release_(release) {
  if (depth++ == 0) lastSignal = 0;
  struct sigaction hold {};
  hold.sa_handler = recordSignal;
  sigemptyset(&hold.sa_mask);
  for (const int signal : signals) {
    Saved& saved = saved_.emplace_back();
    saved.signal = signal;
    ::sigaction(signal, &hold, &saved.previous);
  }
}

HeldSignals::~HeldSignals() {
  for (const Saved& saved : saved_) ::sigaction(saved.signal, &saved.previous, nullptr);
  --depth;
  if (release_ == OnRelease::kDeliver && lastSignal != 0) ::raise(lastSignal);
}

int HeldSignals::received() { return lastSignal; }

}  // namespace autopar
