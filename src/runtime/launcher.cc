#include "runtime/launcher.h"

#include <fmt/format.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <thread>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

extern char** environ;

namespace autopar::runtime {

namespace {

std::string describe(int rank, int status) {
  if (WIFSIGNALED(status)) {
    const int signal = WTERMSIG(status);
    return fmt::format("rank {} was killed by signal {} ({})", rank, signal, strsignal(signal));
  }
  return fmt::format("rank {} exited with status {}", rank, WEXITSTATUS(status));
}

}  // namespace

Status launch(const LaunchOptions& options) {
  c10::intrusive_ptr<c10d::TCPStore> store;
  try {
    c10d::TCPStoreOptions storeOptions;
    storeOptions.port = 0;  // the OS picks a free port
    storeOptions.isServer = true;
    storeOptions.waitWorkers = false;
    storeOptions.numWorkers = options.ranks;
    store = c10::make_intrusive<c10d::TCPStore>(options.address, storeOptions);
  } catch (const std::exception& error) {
    return Error{
        fmt::format("cannot host the rendezvous store on {}: {}", options.address, error.what())};
  }
  std::vector<pid_t> children;
  auto stopAll = [&](int signal) {
    for (pid_t child : children) {
      if (child > 0) kill(child, signal);
    }
  };
  for (int rank = 0; rank < options.ranks; ++rank) {
    std::vector<std::string> env;
    for (char** entry = environ; *entry != nullptr; ++entry) env.emplace_back(*entry);
    env.insert(env.end(), options.environment.begin(), options.environment.end());
    env.push_back(fmt::format("RANK={}", rank));
    env.push_back(fmt::format("WORLD_SIZE={}", options.ranks));
    env.push_back(fmt::format("MASTER_ADDR={}", options.address));
    env.push_back(fmt::format("MASTER_PORT={}", store->getPort()));
    env.push_back("AUTOPAR_STORE=external");
    // Each rank is one CPU device: one thread for LibTorch's kernels and for BLAS, unless told
    // otherwise. (Sharing cores between ranks' thread pools made step times swing several-fold.)
    for (const char* name : {"OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS"}) {
      if (std::getenv(name) == nullptr) env.push_back(fmt::format("{}=1", name));
    }
    std::vector<std::string> args{"/proc/self/exe"};
    args.insert(args.end(), options.arguments.begin(), options.arguments.end());
    std::vector<char*> argv;
    std::vector<char*> envp;
    for (auto& arg : args) argv.push_back(arg.data());
    argv.push_back(nullptr);
    for (auto& entry : env) envp.push_back(entry.data());
    envp.push_back(nullptr);
    pid_t pid = 0;
    if (const int failed =
            posix_spawn(&pid, "/proc/self/exe", nullptr, nullptr, argv.data(), envp.data());
        failed != 0) {
      stopAll(SIGKILL);
      return Error{fmt::format("cannot start rank {}: {}", rank, std::strerror(failed))};
    }
    children.push_back(pid);
  }
  std::optional<std::string> failure;
  int running = options.ranks;
  auto deadline = std::chrono::steady_clock::time_point::max();
  while (running > 0) {
    int status = 0;
    const pid_t done = waitpid(-1, &status, WNOHANG);
    if (done > 0) {
      const auto at = std::find(children.begin(), children.end(), done);
      if (at == children.end()) continue;
      const int rank = static_cast<int>(at - children.begin());
      *at = -1;
      --running;
      const bool failed = !WIFEXITED(status) || WEXITSTATUS(status) != 0;
      if (failed && !failure) {
        failure = describe(rank, status);
        stopAll(SIGTERM);
        deadline = std::chrono::steady_clock::now() + options.grace;
      }
      continue;
    }
    if (std::chrono::steady_clock::now() > deadline) stopAll(SIGKILL);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (failure) return Error{*failure};
  return {};
}

}  // namespace autopar::runtime
