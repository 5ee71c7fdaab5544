#pragma once
/// \file
/// Each verb of the `autopar` command registers its subcommand and the action that runs it.
/// Actions return the process exit status: 0 success, 2 bad input (one line on stderr),
/// 3 a plan that does not fit in device memory.

#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <vector>

#include "cli/verb_output.h"
#include "planner/configuration/estimate_request.h"
#include "util/expected.h"
#include "util/limits.h"

namespace autopar::cli {

using Action = std::function<int()>;

inline constexpr int kExitOk = 0;
inline constexpr int kExitBadInput = 2;
inline constexpr int kExitDoesNotFit = 3;

/// Prints "autopar: error: <message>" on stderr and returns kExitBadInput.
int reportError(const Error& error);

/// Prints "autopar: <advice>" on stderr (what does not fit and what would) and returns
/// kExitDoesNotFit: the input was valid, no configuration of it fits device memory.
int reportDoesNotFit(const std::string& advice);

/// Checks an option is a positive number: "--tp: expected a positive number, got 0" (CLI11's
/// PositiveNumber names its range up to the largest double instead).
const CLI::Validator& positive();
/// A positive number no larger than `limit` (util/limits.h): "--nodes: 268435456 is above the
/// limit 1048576 (docs/limits.md)".
CLI::Validator positiveAtMost(int64_t limit);
/// A finite number in [low, high]: CLI::Range lets nan through ("--memory-margin: expected a
/// number in [0, 1024], got nan").
CLI::Validator finiteIn(double low, double high);

/// Parses argv into `app`'s verbs and runs the chosen verb's action: help exits 0, a parse error
/// is one line and exit 2.
int parseAndRun(CLI::App& app, const Action& action, int argc, char** argv);

/// The verbs the planner library answers (everything but `run`, `check` and `profile`), as
/// `autopar` and the Python package both register them.
void addPlannerVerbs(CLI::App& app, Action& action);

void addPlanVerb(CLI::App& app, Action& action);
void addLayoutVerb(CLI::App& app, Action& action);
void addRedistributeVerb(CLI::App& app, Action& action);
void addListVerbs(CLI::App& app, Action& action);
void addValidateVerb(CLI::App& app, Action& action);
void addIopddlVerb(CLI::App& app, Action& action);
void addEstimateVerb(CLI::App& app, Action& action);
void addSearchVerb(CLI::App& app, Action& action);
void addCalibrateVerb(CLI::App& app, Action& action);
/// What `autopar estimate ARGUMENTS` would estimate: its flags parsed and checked as the verb
/// does (planner/configuration/estimate_request.h); errors are the verb's one-line messages.
Expected<planner::EstimateRequest> estimateRequestOf(const std::vector<std::string>& arguments);
/// `run`, `check` and `profile` as `autopar` lists them: it hands them to autopar-runtime
/// (runtime_verbs.cc).
void addRuntimeVerbs(CLI::App& app, Action& action, char** argv);
/// Whether `verb` is one autopar-runtime runs; `autopar` then starts it with its own argv.
bool isRuntimeVerb(const char* verb);
/// Replaces this process with autopar-runtime (beside this executable) run with `argv`; returns
/// only when that fails, with the error reported.
int execRuntime(char** argv);
/// Runs autopar-runtime (beside this executable) with `arguments` as a child sharing this
/// process's output, and returns its exit status (1 when a signal ended it).
int runRuntime(const std::vector<std::string>& arguments);

/// autopar-runtime's verbs (src/cli/runtime/), which link LibTorch:
/// `run` and `check` (verb_run.cc): execute plans on ranks.
void addRunVerbs(CLI::App& app, Action& action);
/// `profile` (verb_profile.cc): measure blocks on ranks for search --profile.
void addProfileVerb(CLI::App& app, Action& action);

}  // namespace autopar::cli
