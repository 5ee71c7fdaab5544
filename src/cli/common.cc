/// What every verb of both executables (autopar, autopar-runtime) shares: the one-line error and
/// the positive-number check.

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>

#include "cli/verbs.h"

namespace autopar::cli {

int reportError(const Error& error) {
  // An error may echo what was given (a 60 KB argument); one line stays readable.
  constexpr size_t kMaxMessage = 400;
  std::string message = error.message.substr(0, kMaxMessage);
  if (error.message.size() > kMaxMessage) {
    message += fmt::format("... ({} more characters)", error.message.size() - kMaxMessage);
  }
  std::replace(message.begin(), message.end(), '\n', ' ');
  fmt::print(stderr, "autopar: error: {}\n", message);
  return kExitBadInput;
}

namespace {

/// The check of positive() and positiveAtMost(): empty when `input` is a finite number > 0 (no
/// larger than `limit`, when given), else the message.
std::string checkPositive(const std::string& input, std::optional<int64_t> limit) {
  double value = 0;
  if (!CLI::detail::lexical_cast(input, value) || !(value > 0) || !std::isfinite(value)) {
    return fmt::format("expected a positive number, got {}", input);
  }
  if (limit && value > static_cast<double>(*limit)) {
    return fmt::format("{} is above the limit {} (docs/limits.md)", input, *limit);
  }
  return {};
}

}  // namespace

const CLI::Validator& positive() {
  static const CLI::Validator validator(
      [](const std::string& input) { return checkPositive(input, std::nullopt); }, "POSITIVE");
  return validator;
}

CLI::Validator positiveAtMost(int64_t limit) {
  return CLI::Validator(
      [limit](const std::string& input) {
        return checkPositive(input, static_cast<double>(limit));
      },
      fmt::format("POSITIVE <= {}", limit));
}

CLI::Validator finiteIn(double low, double high) {
  return CLI::Validator(
      [low, high](const std::string& input) -> std::string {
        double value = 0;
        if (!CLI::detail::lexical_cast(input, value) || !std::isfinite(value) || value < low ||
            value > high) {
          return fmt::format("expected a number in [{:g}, {:g}], got {}", low, high, input);
        }
        return {};
      },
      fmt::format("FLOAT in [{:g}, {:g}]", low, high));
}

int parseAndRun(CLI::App& app, const Action& action, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& help) {
    return app.exit(help);
  } catch (const CLI::CallForAllHelp& help) {
    return app.exit(help);
  } catch (const CLI::CallForVersion& version) {
    return app.exit(version);
  } catch (const CLI::ParseError& error) {
    // One line, exit status 2, like every other input error.
    return reportError(Error{error.what()});
  }
  return action();
}

}  // namespace autopar::cli
