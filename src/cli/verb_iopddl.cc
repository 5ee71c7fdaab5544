/// `autopar iopddl`: solve or evaluate an ASPLOS 2025 IOPDDL contest instance.
///   autopar iopddl FILE TIMEOUT           prints the contest's final line, [s0, s1, ...]
///   autopar iopddl --evaluate FILE SOLUTION  prints the cost and checks the usage limit
/// Progress and the cost go to stderr, so stdout's last line is the solution. An instance with no
/// feasible solution prints [] and says why (exit status 3).

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <cstdlib>
#include <optional>

#include "cli/progress_line.h"
#include "cli/verbs.h"
#include "frontend/iopddl.h"
#include "search/intra_op/intra_op_solver.h"

namespace autopar::cli {

namespace {

struct IopddlOptions {
  std::string file;
  std::string second;  ///< TIMEOUT, or the solution file with --evaluate
  bool evaluate = false;
  std::string solver = "auto";
  uint64_t seed = 1;
  int threads = 2;
};

int runEvaluate(const IopddlOptions& options, const ir::IntraOpProblem& problem) {
  auto solution = frontend::readIopddlSolution(options.second);
  if (!solution) return reportError(solution.error());
  auto evaluation = ir::evaluateSolution(problem, *solution);
  if (!evaluation) return reportError(evaluation.error().in(options.second));
  fmt::print(verbOut(), "cost {}\npeak usage {} of limit {}\n{}\n", evaluation->cost,
             evaluation->peakUsage, problem.usageLimit,
             evaluation->feasible ? "feasible" : "INFEASIBLE: " + evaluation->reason);
  return evaluation->feasible ? kExitOk : kExitDoesNotFit;
}

int runSolve(const IopddlOptions& options, const ir::IntraOpProblem& problem) {
  search::SolveOptions solve;
  // The whole argument is the number: "2abc" is not 2 seconds.
  char* end = nullptr;
  solve.timeLimitSeconds = std::strtod(options.second.c_str(), &end);
  if (options.second.empty() || *end != '\0' || !std::isfinite(solve.timeLimitSeconds)) {
    return reportError(Error{fmt::format("TIMEOUT '{}': expected seconds", options.second)});
  }
  if (!(solve.timeLimitSeconds > 0) || solve.timeLimitSeconds > 1e6) {
    return reportError(
        Error{fmt::format("TIMEOUT '{}': expected seconds from 0 to 1e6", options.second)});
  }
  // Leave a margin for reading the file and printing the answer.
  solve.timeLimitSeconds = std::max(0.1, solve.timeLimitSeconds * 0.95 - 1.0);
  solve.seed = options.seed;
  solve.threads = options.threads;
  std::optional<ProgressLine> progress;
  progress.emplace(fmt::format("solving {}", options.file), solve.timeLimitSeconds);
  auto result = options.solver == "ilp"     ? search::solveIlp(problem, solve)
                : options.solver == "local" ? search::solveLocalSearch(problem, solve)
                                            : search::solvePortfolio(problem, solve);
  progress.reset();
  if (!result) return reportError(result.error().in(options.file));
  if (result->solution.empty()) {
    fmt::print(verbErr(), "{}: {}\n", options.file, result->status);
    fmt::print(verbOut(), "[]\n");
    return kExitDoesNotFit;
  }
  fmt::print(verbErr(), "{}: cost {}, peak usage {} of limit {} ({})\n", options.file,
             result->evaluation.cost, result->evaluation.peakUsage, problem.usageLimit,
             result->status);
  fmt::print(verbOut(), "[{}]\n", fmt::join(result->solution, ", "));
  return kExitOk;
}

int runIopddl(const IopddlOptions& options) {
  if (options.solver != "auto" && options.solver != "ilp" && options.solver != "local") {
    return reportError(
        Error{fmt::format("--solver '{}': expected auto, ilp or local", options.solver)});
  }
  auto problem = frontend::readIopddl(options.file);
  if (!problem) return reportError(problem.error());
  return options.evaluate ? runEvaluate(options, *problem) : runSolve(options, *problem);
}

}  // namespace

void addIopddlVerb(CLI::App& app, Action& action) {
  auto options = std::make_shared<IopddlOptions>();
  CLI::App* verb = app.add_subcommand(
      "iopddl",
      "Solve an IOPDDL contest instance (FILE TIMEOUT) and print [s0, s1, ...], or evaluate a "
      "solution (--evaluate FILE SOLUTION)");
  verb->add_option("FILE", options->file, "instance, .json or .json.gz")->required();
  verb->add_option("TIMEOUT_OR_SOLUTION", options->second,
                   "seconds to solve within, or with --evaluate the solution file")
      ->required();
  verb->add_flag("--evaluate", options->evaluate, "evaluate the solution in the second argument");
  verb->add_option("--solver", options->solver,
                   "auto (the exact ILP beside the local search when the problem is small "
                   "enough for CBC, else local search) | ilp | local")
      ->capture_default_str();
  verb->add_option("--seed", options->seed, "seed of the local search")
      ->check(CLI::Range(0.0, 9.0e18))
      ->capture_default_str();
  verb->add_option("--threads", options->threads, "local searches run in parallel")
      ->check(positiveAtMost(limits::kMaxThreads))
      ->capture_default_str();
  verb->callback([&action, options] { action = [options] { return runIopddl(*options); }; });
}

}  // namespace autopar::cli
