#pragma once
/// \file
/// Where a verb writes: the process's stdout and stderr when `autopar` runs it, memory streams
/// when the Python package runs it in-process (src/python/module.cc), so that the package returns
/// what the command prints. Per thread: two Python threads may run verbs at once.
///   const VerbOutputScope scope{buffers.out, buffers.err};  // this thread's verbs write there

#include <unistd.h>

#include <atomic>
#include <cstdio>

namespace autopar::cli {

struct VerbOutput {
  std::FILE* out = stdout;
  std::FILE* err = stderr;
  /// Set by the Python package when its caller is interrupted (Ctrl-C); null for the command,
  /// which a signal ends.
  const std::atomic<bool>* cancel = nullptr;
};

/// What a verb's progress callbacks throw once `cancel` is set: the search unwinds to the caller.
struct VerbCancelled {};

inline VerbOutput& verbOutput() {
  thread_local VerbOutput output;
  return output;
}

inline std::FILE* verbOut() { return verbOutput().out; }
inline std::FILE* verbErr() { return verbOutput().err; }

/// Whether progress lines may be drawn: the verb writes to the process's stderr, a terminal.
inline bool errIsTerminal() { return verbErr() == stderr && isatty(STDERR_FILENO) != 0; }

/// Throws VerbCancelled when this thread's caller asked the verb to stop. The searches call it
/// between units of work (a refined candidate, a planning step, a batch of fix trials).
inline void stopIfCancelled() {
  const std::atomic<bool>* cancel = verbOutput().cancel;
  if (cancel != nullptr && cancel->load()) throw VerbCancelled{};
}

/// Sends this thread's verb output to `out` and `err`, and lets `cancel` stop it, while it lives.
class VerbOutputScope {
 public:
  VerbOutputScope(std::FILE* out, std::FILE* err, const std::atomic<bool>* cancel)
      : saved_(verbOutput()) {
    verbOutput() = VerbOutput{out, err, cancel};
  }
  ~VerbOutputScope() { verbOutput() = saved_; }
  VerbOutputScope(const VerbOutputScope&) = delete;
  VerbOutputScope& operator=(const VerbOutputScope&) = delete;

 private:
  VerbOutput saved_;
};

}  // namespace autopar::cli
