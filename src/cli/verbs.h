#pragma once
/// \file
/// Each verb of the `autopar` command registers its subcommand and the action that runs it.
/// Actions return the process exit status: 0 success, 2 bad input (one line on stderr),
/// 3 a plan that does not fit in device memory.

#include <CLI/CLI.hpp>
#include <functional>

#include "util/expected.h"

namespace autopar::cli {

using Action = std::function<int()>;

inline constexpr int kExitOk = 0;
inline constexpr int kExitBadInput = 2;
inline constexpr int kExitDoesNotFit = 3;

/// Prints "autopar: error: <message>" on stderr and returns kExitBadInput.
int reportError(const Error& error);

/// Checks an option is a positive number: "--tp: expected a positive number, got 0" (CLI11's
/// PositiveNumber names its range up to the largest double instead).
const CLI::Validator& positive();

void addPlanVerb(CLI::App& app, Action& action);
void addLayoutVerb(CLI::App& app, Action& action);
void addRedistributeVerb(CLI::App& app, Action& action);
void addListVerbs(CLI::App& app, Action& action);
void addValidateVerb(CLI::App& app, Action& action);
void addIopddlVerb(CLI::App& app, Action& action);
void addEstimateVerb(CLI::App& app, Action& action);
void addSearchVerb(CLI::App& app, Action& action);
/// `run` and `check` (verb_run.cc): execute plans on ranks; they need LibTorch.
void addRunVerbs(CLI::App& app, Action& action);
/// `profile` (verb_profile.cc): measure blocks on ranks for search --profile; needs LibTorch.
void addProfileVerb(CLI::App& app, Action& action);

}  // namespace autopar::cli
