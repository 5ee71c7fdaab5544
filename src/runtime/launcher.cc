#include "runtime/launcher.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netdb.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string_view>
#include <thread>
#include <torch/csrc/distributed/c10d/FileStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "runtime/result_file.h"
#include "util/held_signals.h"
#include "util/limits.h"
#include "util/temporary_directory.h"

extern char** environ;

namespace autopar::runtime {

namespace {

using Clock = std::chrono::steady_clock;

std::string signalText(int signal) {
  return fmt::format("signal {} ({})", signal, strsignal(signal));
}

std::string describe(int rank, int status) {
  if (WIFSIGNALED(status))
    return fmt::format("rank {} was killed by {}", rank, signalText(WTERMSIG(status)));
  return fmt::format("rank {} exited with status {}", rank, WEXITSTATUS(status));
}

/// An environment variable read as a whole integer in [low, high], or one line saying why not.
Expected<int64_t> environmentInt(const char* name, int64_t low, int64_t high,
                                 const std::string& meaning) {
  const char* value = std::getenv(name);
  if (value == nullptr) {
    return Error{
        fmt::format("run: {} is not set: give --ranks N, or set RANK, WORLD_SIZE, MASTER_ADDR and "
                    "MASTER_PORT (integers) to join a job",
                    name)};
  }
  char* end = nullptr;
  errno = 0;
  const long long parsed = std::strtoll(value, &end, 10);
  if (end == value || *end != '\0' || errno != 0 || parsed < low || parsed > high) {
    return Error{fmt::format("run: {}='{:.100}': expected {}, a whole number from {} to {}", name,
                             value, meaning, low, high)};
  }
  return static_cast<int64_t>(parsed);
}

/// The children of one launch, by rank.
class Ranks {
 public:
  void add(pid_t pid) { children_.push_back({pid, std::nullopt, 0}); }
  [[nodiscard]] int rankOf(pid_t pid) const {
    const auto at = std::find_if(children_.begin(), children_.end(),
                                 [pid](const Child& child) { return child.pid == pid; });
    return at == children_.end() ? -1 : static_cast<int>(at - children_.begin());
  }
  void reaped(int rank) { at(rank).pid = -1; }
  void stopped(int rank, int signal) {
    at(rank).stoppedSince = Clock::now();
    at(rank).stoppedBy = signal;
  }
  void continued(int rank) { at(rank).stoppedSince.reset(); }
  /// Sends `signal` to every rank still running, and SIGCONT so a stopped one acts on it.
  void signalAll(int signal) const {
    for (const Child& child : children_) {
      if (child.pid <= 0) continue;
      kill(child.pid, signal);
      kill(child.pid, SIGCONT);
    }
  }
  /// The rank stopped longest, with how long, if any is stopped.
  [[nodiscard]] std::optional<std::pair<int, Clock::duration>> longestStopped() const {
    std::optional<std::pair<int, Clock::duration>> longest;
    for (size_t r = 0; r < children_.size(); ++r) {
      const Child& child = children_[r];
      if (child.pid <= 0 || !child.stoppedSince) continue;
      const Clock::duration stopped = Clock::now() - *child.stoppedSince;
      if (!longest || stopped > longest->second) longest = {{static_cast<int>(r), stopped}};
    }
    return longest;
  }
  [[nodiscard]] std::string stoppedText(int rank, Clock::duration stopped) const {
    return fmt::format("rank {} was stopped by {} and made no progress for {:.0f} s", rank,
                       signalText(children_[static_cast<size_t>(rank)].stoppedBy),
                       std::chrono::duration<double>(stopped).count());
  }

 private:
  struct Child {
    pid_t pid;  ///< -1 once reaped
    std::optional<Clock::time_point> stoppedSince;
    int stoppedBy;  ///< the signal that stopped it
  };
  Child& at(int rank) { return children_[static_cast<size_t>(rank)]; }
  std::vector<Child> children_;
};

std::vector<std::string> rankEnvironment(const LaunchOptions& options, int rank,
                                         const std::string& storeFile) {
  std::vector<std::string> env;
  for (char** entry = environ; *entry != nullptr; ++entry) env.emplace_back(*entry);
  env.insert(env.end(), options.environment.begin(), options.environment.end());
  env.push_back(fmt::format("RANK={}", rank));
  env.push_back(fmt::format("WORLD_SIZE={}", options.ranks));
  env.push_back(fmt::format("MASTER_ADDR={}", options.address));
  env.push_back(fmt::format("AUTOPAR_STORE=file:{}", storeFile));
  env.push_back(fmt::format("AUTOPAR_LAUNCHER_PID={}", getpid()));
  // Each rank is one CPU device: one thread for LibTorch's kernels and for BLAS, unless told
  // otherwise. (Sharing cores between ranks' thread pools made step times swing several-fold.)
  for (const char* name : {"OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS"}) {
    if (std::getenv(name) == nullptr) env.push_back(fmt::format("{}=1", name));
  }
  return env;
}

Status spawnRank(const LaunchOptions& options, int rank, const std::string& storeFile,
                 Ranks& ranks) {
  std::vector<std::string> env = rankEnvironment(options, rank, storeFile);
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
    return Error{fmt::format("cannot start rank {}: {}", rank, std::strerror(failed))};
  }
  ranks.add(pid);
  return {};
}

/// Waits for every rank; the first failure (a rank lost, stopped too long, or the launcher
/// signalled) stops the others.
Status watch(const LaunchOptions& options, Ranks& ranks) {
  std::optional<std::string> failure;
  int running = options.ranks;
  auto deadline = Clock::time_point::max();
  const auto fail = [&](std::string why, int signal) {
    failure = std::move(why);
    ranks.signalAll(signal);
    deadline = Clock::now() + options.grace;
  };
  while (running > 0) {
    int status = 0;
    const pid_t done = waitpid(-1, &status, WNOHANG | WUNTRACED | WCONTINUED);
    const int rank = done > 0 ? ranks.rankOf(done) : -1;
    if (done > 0 && rank < 0) continue;
    if (done > 0 && WIFSTOPPED(status)) {
      ranks.stopped(rank, WSTOPSIG(status));
    } else if (done > 0 && WIFCONTINUED(status)) {
      ranks.continued(rank);
    } else if (done > 0) {
      ranks.reaped(rank);
      --running;
      const bool failed = !WIFEXITED(status) || WEXITSTATUS(status) != 0;
      if (failed && !failure) {
        // A peer's timeout is the stopped rank's doing: name that one.
        const auto stopped = ranks.longestStopped();
        fail(stopped ? fmt::format("{}; {}", ranks.stoppedText(stopped->first, stopped->second),
                                   describe(rank, status))
                     : describe(rank, status),
             SIGTERM);
      }
    } else {
      if (const int signal = HeldSignals::received(); signal != 0 && !failure) {
        fail(fmt::format("interrupted by {}: stopped the {} ranks", signalText(signal),
                         options.ranks),
             signal);
      }
      const auto stopped = ranks.longestStopped();
      if (stopped && stopped->second >= options.timeout && !failure) {
        fail(ranks.stoppedText(stopped->first, stopped->second), SIGKILL);
      }
      if (Clock::now() > deadline) ranks.signalAll(SIGKILL);
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  if (failure) return Error{*failure};
  return {};
}

bool resolves(const std::string& address, addrinfo** found) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  return getaddrinfo(address.c_str(), nullptr, &hints, found) == 0;
}

/// Whether `address` resolves to a wildcard (0.0.0.0, ::): a place to listen, not one a peer can
/// connect to, so the ranks could never reach the store there.
bool isWildcard(const addrinfo* found) {
  for (const addrinfo* at = found; at != nullptr; at = at->ai_next) {
    if (at->ai_family == AF_INET &&
        reinterpret_cast<const sockaddr_in*>(at->ai_addr)->sin_addr.s_addr == htonl(INADDR_ANY)) {
      return true;
    }
    if (at->ai_family == AF_INET6 &&
        IN6_IS_ADDR_UNSPECIFIED(&reinterpret_cast<const sockaddr_in6*>(at->ai_addr)->sin6_addr)) {
      return true;
    }
  }
  return false;
}

constexpr std::string_view kWildcardAdvice =
    "a wildcard address, which peers cannot connect to; give this machine's address on the "
    "network the ranks share (127.0.0.1 when they all run here)";

}  // namespace

Status checkAddress(const std::string& address) {
  addrinfo* found = nullptr;
  if (address.empty() || !resolves(address, &found)) {
    return Error{fmt::format(
        "--address '{:.100}': expected an IP address or a host name that resolves", address)};
  }
  if (isWildcard(found)) {
    freeaddrinfo(found);
    return Error{fmt::format("--address '{:.100}': {}", address, kWildcardAdvice)};
  }
  // Gloo binds to it: it must be one of this machine's addresses.
  bool local = false;
  for (addrinfo* at = found; at != nullptr && !local; at = at->ai_next) {
    const int socket = ::socket(at->ai_family, SOCK_STREAM, 0);
    if (socket < 0) continue;
    local = bind(socket, at->ai_addr, at->ai_addrlen) == 0;
    close(socket);
  }
  freeaddrinfo(found);
  if (!local) {
    return Error{fmt::format(
        "--address '{:.100}' is not an address of this machine (the ranks bind to it)", address)};
  }
  return {};
}

c10::intrusive_ptr<c10d::Store> connectStore(const Connection& connection) {
  if (!connection.storeFile.empty()) {
    auto store = c10::make_intrusive<c10d::FileStore>(connection.storeFile, connection.world);
    store->setTimeout(connection.timeout);
    return store;
  }
  c10d::TCPStoreOptions options;
  options.port = static_cast<uint16_t>(connection.port);
  options.isServer = connection.hostsStore;
  options.numWorkers = connection.world;
  options.waitWorkers = false;
  options.timeout = connection.timeout;
  return c10::make_intrusive<c10d::TCPStore>(connection.address, options);
}

Status launch(const LaunchOptions& options) {
  const util::TemporaryDirectory scratch("autopar-store");
  if (scratch.empty()) return Error{"cannot create a temporary directory for the ranks' store"};
  const std::string storeFile = scratch.path() + "/store";
  // SIGINT, SIGTERM and SIGHUP are noted while the ranks run, so the launcher can forward them
  // and clean up.
  const HeldSignals signals;
  Ranks ranks;
  for (int rank = 0; rank < options.ranks; ++rank) {
    if (auto started = spawnRank(options, rank, storeFile, ranks); !started) {
      ranks.signalAll(SIGKILL);
      while (waitpid(-1, nullptr, 0) > 0) {
      }
      return started.error();
    }
  }
  return watch(options, ranks);
}

Expected<std::vector<RankResult>> launchAndCollect(LaunchOptions options, int collect) {
  const util::TemporaryDirectory scratch("autopar-results");
  if (scratch.empty()) return Error{"cannot create a temporary directory for the ranks' results"};
  // Held until the results are read, so a signal at any point removes the directory on its way
  // out (launch() forwards one that arrives while the ranks run).
  const HeldSignals signals;
  options.arguments.insert(options.arguments.end(), {"--result-dir", scratch.path()});
  if (auto launched = launch(options); !launched) return launched.error();
  std::vector<RankResult> results;
  for (int rank = 0; rank < collect && HeldSignals::received() == 0; ++rank) {
    auto result = readResult(fmt::format("{}/rank-{}.pt", scratch.path(), rank));
    if (!result) return result.error();
    results.push_back(std::move(*result));
  }
  if (const int signal = HeldSignals::received(); signal != 0) {
    return Error{fmt::format("interrupted by {}", signalText(signal))};
  }
  return results;
}

Expected<Connection> connectionFromEnvironment(const std::string& defaultAddress) {
  // Under autopar's launcher, die with it (and not start at all if it is already gone).
  if (const char* launcher = std::getenv("AUTOPAR_LAUNCHER_PID"); launcher != nullptr) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (std::to_string(getppid()) != launcher) return Error{"run: the launcher has exited"};
  }
  const auto world = environmentInt("WORLD_SIZE", 1, limits::kMaxDevices, "the number of ranks");
  if (!world) return world.error();
  const auto rank = environmentInt("RANK", 0, *world - 1, "this rank, below WORLD_SIZE");
  if (!rank) return rank.error();
  Connection connection;
  connection.rank = static_cast<int>(*rank);
  connection.world = static_cast<int>(*world);
  const char* address = std::getenv("MASTER_ADDR");
  connection.address = address != nullptr ? address : defaultAddress;
  const char* store = std::getenv("AUTOPAR_STORE");
  const std::string storeText = store != nullptr ? store : "";
  if (storeText.rfind("file:", 0) == 0) {
    connection.storeFile = storeText.substr(5);
  } else {
    const auto port = environmentInt("MASTER_PORT", 1, 65535, "the store's TCP port");
    if (!port) return port.error();
    connection.port = static_cast<int>(*port);
    addrinfo* found = nullptr;
    if (!resolves(connection.address, &found)) {
      return Error{
          fmt::format("run: MASTER_ADDR='{:.100}': expected an IP address or a host "
                      "name that resolves",
                      connection.address)};
    }
    const bool wildcard = isWildcard(found);
    freeaddrinfo(found);
    if (wildcard) {
      return Error{
          fmt::format("run: MASTER_ADDR='{:.100}': {}", connection.address, kWildcardAdvice)};
    }
  }
  connection.hostsStore = *rank == 0 && storeText != "external" && connection.storeFile.empty();
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
