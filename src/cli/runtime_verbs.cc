/// `autopar run`, `check` and `profile` are autopar-runtime's (src/cli/runtime/): it links
/// LibTorch, which `autopar` does not, so that every other verb starts in milliseconds. `autopar`
/// lists them in its help and replaces itself with autopar-runtime when one is asked for.

#include <fmt/format.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "cli/verbs.h"

namespace autopar::cli {

namespace {

constexpr std::array<std::string_view, 3> kRuntimeVerbs{"run", "check", "profile"};
constexpr std::array<const char*, 3> kRuntimeVerbHelp{
    "Run a plan on local ranks: per-step loss and time (LibTorch + Gloo, docs/runtime.md)",
    "Run a plan and the unsharded model, and compare losses and parameters (docs/runtime.md)",
    "Measure a transformer's blocks on local ranks for search --profile "
    "(docs/profile-table.md)"};

/// autopar-runtime beside this executable; `error` is set when this executable's path is unknown.
std::filesystem::path runtimePath(std::error_code& error) {
  return std::filesystem::read_symlink("/proc/self/exe", error).parent_path() / "autopar-runtime";
}

/// The one line when autopar-runtime cannot be started for `verb` (errno-style `code`).
int runtimeMissing(std::string_view verb, const std::filesystem::path& runtime, int code) {
  return reportError(Error{
      fmt::format("{}: needs autopar-runtime beside autopar ({}: {}); it is built where LibTorch "
                  "(libtorch-dev) is found: run scripts/setup.sh, then scripts/build.sh",
                  verb, runtime.string(), std::strerror(code))});
}

}  // namespace

bool isRuntimeVerb(const char* verb) {
  return std::find(kRuntimeVerbs.begin(), kRuntimeVerbs.end(), std::string_view(verb)) !=
         kRuntimeVerbs.end();
}

int execRuntime(char** argv) {
  std::error_code error;
  const std::filesystem::path runtime = runtimePath(error);
  if (!error) execv(runtime.c_str(), argv);
  return runtimeMissing(argv[1], runtime, error ? error.value() : errno);
}

int runRuntime(const std::vector<std::string>& arguments) {
  std::error_code error;
  const std::filesystem::path runtime = runtimePath(error);
  std::vector<char*> argv{const_cast<char*>(runtime.c_str())};
  for (const std::string& argument : arguments) argv.push_back(const_cast<char*>(argument.c_str()));
  argv.push_back(nullptr);
  pid_t child = 0;
  const int spawned =
      error ? error.value()
            : posix_spawn(&child, runtime.c_str(), nullptr, nullptr, argv.data(), environ);
  if (spawned != 0) return runtimeMissing(arguments.front(), runtime, spawned);
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  fmt::print(verbErr(), "autopar: error: autopar-runtime {} was killed by signal {}\n",
             arguments.front(), WTERMSIG(status));
  return 1;
}

void addRuntimeVerbs(CLI::App& app, Action& action, char** argv) {
  for (size_t i = 0; i < kRuntimeVerbs.size(); ++i) {
    CLI::App* verb = app.add_subcommand(std::string(kRuntimeVerbs[i]), kRuntimeVerbHelp[i]);
    // main() hands these verbs to autopar-runtime before parsing (so that their --help is the
    // runtime's); should one be reached here, the runtime parses the same arguments the same way.
    verb->allow_extras();
    verb->callback([&action, argv] { action = [argv] { return execRuntime(argv); }; });
  }
}

}  // namespace autopar::cli
