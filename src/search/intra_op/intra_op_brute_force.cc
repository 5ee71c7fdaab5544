// solveBruteForce (intra_op_solver.h): enumeration, for tests on problems of a few nodes.

#include "search/intra_op/intra_op_solver.h"

namespace autopar::search {

SolveResult solveBruteForce(const ir::IntraOpProblem& problem) {
  SolveResult result;
  std::vector<int> choice(problem.nodes.size(), 0);
  while (true) {
    auto evaluation = ir::evaluateSolution(problem, choice);
    if (evaluation && evaluation->feasible &&
        (result.solution.empty() || evaluation->cost < result.evaluation.cost)) {
      result.solution = choice;
      result.evaluation = *evaluation;
    }
    size_t v = 0;
    while (v < choice.size() && ++choice[v] == problem.strategies(static_cast<int>(v))) {
      choice[v++] = 0;
    }
    if (v == choice.size()) break;
  }
  result.optimal = !result.solution.empty();
  result.status = result.optimal ? "optimal (enumeration)" : "infeasible";
  return result;
}

}  // namespace autopar::search
