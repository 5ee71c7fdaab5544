/// The Python extension `autopar._autopar`: runs autopar's planner verbs in-process, with the
/// options, checks and messages the command declares (src/cli), and returns what the verb prints
/// instead of printing it. The package python/autopar turns keyword arguments into those options
/// and the output into typed results (docs/python.md).
///   status, out, err = _autopar.run(["search", "--model", "llama2-7b", "--json"])

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "cli/verbs.h"
#include "plan/plan.h"

namespace py = pybind11;

namespace {

using autopar::cli::Action;

/// Exit status of a verb its caller interrupted (as a shell reports SIGINT).
constexpr int kExitInterrupted = 130;

/// A memory stream a verb writes into (open_memstream), read back once it is closed.
class MemoryStream {
 public:
  MemoryStream() : file_(open_memstream(&data_, &size_)) {}
  ~MemoryStream() {
    if (file_ != nullptr) std::fclose(file_);
    std::free(data_);
  }
  MemoryStream(const MemoryStream&) = delete;
  MemoryStream& operator=(const MemoryStream&) = delete;

  std::FILE* file() const { return file_; }
  /// Closes the stream and returns what was written.
  std::string text() {
    if (file_ != nullptr) std::fclose(file_);
    file_ = nullptr;
    return data_ == nullptr ? std::string() : std::string(data_, size_);
  }

 private:
  char* data_ = nullptr;
  size_t size_ = 0;
  std::FILE* file_;
};

/// The command-line application with the planner's verbs, as `autopar` builds it.
struct PlannerApp {
  CLI::App app{"autopar"};
  Action action;
  PlannerApp() {
    app.require_subcommand(1);
    autopar::cli::addPlannerVerbs(app, action);
  }
};

/// Runs `arguments` (a verb and its options) on this thread with its output in memory.
std::tuple<int, std::string, std::string> runVerb(const std::vector<std::string>& arguments,
                                                  const std::atomic<bool>* cancel) {
  MemoryStream out;
  MemoryStream err;
  if (out.file() == nullptr || err.file() == nullptr) {
    return {autopar::cli::kExitBadInput, "", "autopar: error: cannot allocate output buffers\n"};
  }
  int status = 0;
  {
    const autopar::cli::VerbOutputScope scope(out.file(), err.file(), cancel);
    std::vector<std::string> words{"autopar"};
    words.insert(words.end(), arguments.begin(), arguments.end());
    std::vector<char*> argv;
    for (std::string& word : words) argv.push_back(word.data());
    argv.push_back(nullptr);
    try {
      PlannerApp planner;
      status = autopar::cli::parseAndRun(planner.app, planner.action,
                                         static_cast<int>(words.size()), argv.data());
    } catch (const autopar::cli::VerbCancelled&) {
      status = kExitInterrupted;
    }
  }
  return {status, out.text(), err.text()};
}

/// runVerb on a worker thread while this one, without the GIL, waits for it and checks every
/// 50 ms for Python's signals: Ctrl-C asks the verb to stop at its next unit of work, waits for
/// it to unwind, and raises KeyboardInterrupt.
std::tuple<int, std::string, std::string> run(const std::vector<std::string>& arguments) {
  std::atomic<bool> cancel{false};  // outlives the worker: it is joined below
  std::packaged_task<std::tuple<int, std::string, std::string>()> task(
      [&arguments, &cancel] { return runVerb(arguments, &cancel); });
  auto result = task.get_future();
  std::thread worker(std::move(task));
  bool interrupted = false;
  {
    const py::gil_scoped_release released;
    while (result.wait_for(std::chrono::milliseconds(50)) != std::future_status::ready) {
      if (interrupted) continue;
      const py::gil_scoped_acquire held;
      if (PyErr_CheckSignals() != 0) {
        interrupted = true;
        cancel.store(true);
      }
    }
  }
  worker.join();
  if (interrupted) throw py::error_already_set();
  return result.get();
}

/// An option a verb declares: its long names (a positional's name), whether it takes a value,
/// whether it is positional, the delimiter its values are joined with ("" when each value is
/// given as the option again), and its description.
using DeclaredOption = std::tuple<std::vector<std::string>, bool, bool, std::string, std::string>;

std::vector<DeclaredOption> options(const std::string& verb) {
  PlannerApp planner;
  const CLI::App* command = nullptr;
  try {
    command = planner.app.get_subcommand(verb);
  } catch (const CLI::OptionNotFound&) {
    throw py::value_error("unknown verb '" + verb + "'");
  }
  std::vector<DeclaredOption> declared;
  for (const CLI::Option* option : command->get_options()) {
    const char delimiter = option->get_delimiter();
    const std::string joiner = delimiter == '\0' ? "" : std::string(1, delimiter);
    if (option->get_lnames().empty() && option->get_positional()) {
      declared.emplace_back(std::vector<std::string>{option->get_name(true, false)}, true, true,
                            joiner, option->get_description());
    } else if (!option->get_lnames().empty() && option->get_lnames().front() != "help") {
      declared.emplace_back(option->get_lnames(), option->get_type_size_max() != 0, false, joiner,
                            option->get_description());
    }
  }
  return declared;
}

std::vector<std::string> verbs() {
  PlannerApp planner;
  std::vector<std::string> names;
  for (const CLI::App* command : planner.app.get_subcommands({})) {
    names.push_back(command->get_name());
  }
  return names;
}

}  // namespace

PYBIND11_MODULE(_autopar, m) {
  m.doc() = "autopar's planner verbs, run in-process (the package autopar wraps them)";
  m.attr("__version__") = AUTOPAR_VERSION;
  m.attr("plan_format_version") = autopar::plan::kPlanFormatVersion;
  m.def("run", &run, py::arg("arguments"),
        "Runs a verb with its options as `autopar` would; returns (exit status, stdout, stderr)");
  m.def("options", &options, py::arg("verb"),
        "The options a verb declares: (long names, takes a value, positional, delimiter, "
        "description)");
  m.def("verbs", &verbs, "The planner verbs the extension runs");
}
