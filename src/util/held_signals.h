#pragma once
/// \file
/// Signals held while a process must finish something first: while a HeldSignals lives, the
/// signals it names are recorded by a process-wide handler (in whichever thread they land) instead
/// of ending the process, and the previous handling comes back when it ends. The launcher holds
/// SIGINT, SIGTERM and SIGHUP while ranks run, to stop them and remove its directories; an atomic
/// write holds them (and SIGQUIT) while its temporary file exists, then delivers what arrived.
///   { const HeldSignals held; ...; if (HeldSignals::received() != 0) stop(); }

#include <csignal>
#include <initializer_list>
#include <vector>

namespace autopar {

class HeldSignals {
 public:
  /// How a hold ends: the previous handling back (kRestore), or that and then the last signal
  /// that arrived raised again, so it acts as it would have (kDeliver).
  enum class OnRelease { kRestore, kDeliver };

  explicit HeldSignals(std::initializer_list<int> signals = {SIGINT, SIGTERM, SIGHUP},
                       OnRelease release = OnRelease::kRestore);
  ~HeldSignals();
  HeldSignals(const HeldSignals&) = delete;
  HeldSignals& operator=(const HeldSignals&) = delete;

  /// The last signal that arrived while any hold lived, 0 for none. The outermost of nested holds
  /// starts the record afresh, so an inner hold does not forget what an outer one noted.
  static int received();

 private:
  struct Saved {
    int signal = 0;
    struct sigaction previous {};
  };
  std::vector<Saved> saved_;
  OnRelease release_;
};

}  // namespace autopar
