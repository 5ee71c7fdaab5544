/// The `autopar` command: parses the verb and its options, then runs the verb's action.

#include <fmt/format.h>

#include <cstdio>

#include "cli/verbs.h"

namespace autopar::cli {

int reportError(const Error& error) {
  fmt::print(stderr, "autopar: error: {}\n", error.message);
  return kExitBadInput;
}

const CLI::Validator& positive() {
  static const CLI::Validator validator(
      [](const std::string& input) -> std::string {
        double value = 0;
        if (!CLI::detail::lexical_cast(input, value) || !(value > 0)) {
          return fmt::format("expected a positive number, got {}", input);
        }
        return {};
      },
      "POSITIVE");
  return validator;
}

}  // namespace autopar::cli

int main(int argc, char** argv) {
  using namespace autopar::cli;
  CLI::App app{"autopar: find the fastest parallel plan that fits, and predict its step time"};
  app.require_subcommand(1);
  Action action;
  addPlanVerb(app, action);
  addLayoutVerb(app, action);
  addRedistributeVerb(app, action);
  addListVerbs(app, action);
  addValidateVerb(app, action);
  addIopddlVerb(app, action);
  addEstimateVerb(app, action);
  addSearchVerb(app, action);
  addRunVerbs(app, action);
  addProfileVerb(app, action);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& help) {
    return app.exit(help);
  } catch (const CLI::CallForAllHelp& help) {
    return app.exit(help);
  } catch (const CLI::ParseError& error) {
    // One line, exit status 2, like every other input error.
    return reportError(autopar::Error{error.what()});
  }
  return action();
}
