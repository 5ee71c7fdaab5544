/// The verbs `autopar` and the Python package share (autopar-runtime has its own).

#include "cli/verbs.h"

namespace autopar::cli {

void addPlannerVerbs(CLI::App& app, Action& action) {
  addPlanVerb(app, action);
  addLayoutVerb(app, action);
  addRedistributeVerb(app, action);
  addListVerbs(app, action);
  addValidateVerb(app, action);
  addIopddlVerb(app, action);
  addEstimateVerb(app, action);
  addSearchVerb(app, action);
  addCalibrateVerb(app, action);
}

}  // namespace autopar::cli
