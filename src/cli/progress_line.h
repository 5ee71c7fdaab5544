#pragma once
/// \file
/// A progress line on stderr for work that can take more than a couple of seconds (an ILP, an
/// IOPDDL solve): "solving the ILP: 12 s (limit 30 s)", redrawn every half second from a thread
/// while the object lives, and erased when it goes. Nothing when stderr is not a terminal, so
/// logs and tests see only the answer.

#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include "cli/verb_output.h"

namespace autopar::cli {

class ProgressLine {
 public:
  /// `what`: the work, e.g. "solving the ILP"; `limitSeconds` > 0 adds "(limit N s)".
  ProgressLine(std::string what, double limitSeconds) {
    if (!errIsTerminal()) return;
    const std::string limit =
        limitSeconds > 0 ? fmt::format(" (limit {:g} s)", limitSeconds) : std::string();
    thread_ = std::thread([this, what = std::move(what), limit, err = verbErr()] {
      const auto start = std::chrono::steady_clock::now();
      std::unique_lock<std::mutex> lock(mutex_);
      while (!cv_.wait_for(lock, std::chrono::milliseconds(500), [this] { return done_; })) {
        const double elapsed =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        fmt::print(err, "\r{}: {:.0f} s{}", what, elapsed, limit);
        std::fflush(err);
      }
      fmt::print(err, "\r\033[K");
    });
  }
  ~ProgressLine() {
    if (!thread_.joinable()) return;
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      done_ = true;
    }
    cv_.notify_one();
    thread_.join();
  }
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

}  // namespace autopar::cli
