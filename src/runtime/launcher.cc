#include "runtime/launcher.h"

#include <fmt/format.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <thread>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "runtime/result_file.h"

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

std::optional<int> environmentInt(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr) return std::nullopt;
  char* end = nullptr;
  const long parsed = std::strtol(value, &end, 10);
  if (end == value || *end != '\0') return std::nullopt;
  return static_cast<int>(parsed);
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

Expected<std::vector<RankResult>> launchAndCollect(LaunchOptions options, int collect) {
  char pattern[] = "/tmp/autopar-results-XXXXXX";
  const char* dir = mkdtemp(pattern);
  if (dir == nullptr) return Error{"cannot create a temporary directory for the ranks' results"};
  options.arguments.insert(options.arguments.end(), {"--result-dir", dir});
  Expected<std::vector<RankResult>> results = std::vector<RankResult>{};
  if (auto launched = launch(options); !launched) results = launched.error();
  for (int rank = 0; rank < collect && results; ++rank) {
    auto result = readResult(fmt::format("{}/rank-{}.pt", dir, rank));
    if (!result) {
      results = result.error();
    } else {
      results->push_back(std::move(*result));
    }
  }
  std::filesystem::remove_all(dir);
  return results;
}

Expected<Connection> connectionFromEnvironment(const std::string& defaultAddress) {
  const auto rank = environmentInt("RANK");
  const auto world = environmentInt("WORLD_SIZE");
  const auto port = environmentInt("MASTER_PORT");
  if (!rank || !world || !port) {
    return Error{
        "run: give --ranks N, or set RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT (integers) "
        "to join a job"};
  }
  Connection connection;
  connection.rank = *rank;
  connection.world = *world;
  connection.port = *port;
  const char* address = std::getenv("MASTER_ADDR");
  connection.address = address != nullptr ? address : defaultAddress;
  const char* store = std::getenv("AUTOPAR_STORE");
  connection.hostsStore = *rank == 0 && (store == nullptr || std::string(store) != "external");
  return connection;
}

void applyFaultInjection(int rank, RunConfig& config) {
  const char* fault = std::getenv("AUTOPAR_FAULT");
  if (fault == nullptr) return;
  int faultRank = -1;
  int faultStep = -1;
  if (std::string(fault) == "drop-gradient-sums") {
    config.dropGradientSums = true;
  } else if (std::sscanf(fault, "%d:%d", &faultRank, &faultStep) == 2 && faultRank == rank) {
    config.dieAtStep = faultStep;
  }
}

}  // namespace autopar::runtime
