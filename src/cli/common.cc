/// What every verb of both executables (autopar, autopar-runtime) shares: the one-line error and
/// the positive-number check.

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <set>
#include <string_view>

#include "cli/verbs.h"

namespace autopar::cli {

namespace {

/// `text` as one readable line: at most `limit` characters, control bytes escaped.
std::string oneLine(const std::string& text, size_t limit) {
  std::string message = text.substr(0, limit);
  if (text.size() > limit) {
    message += fmt::format("... ({} more characters)", text.size() - limit);
  }
  std::replace(message.begin(), message.end(), '\n', ' ');
  // An error may echo bytes from a file or an argument: a control byte (a terminal escape, a
  // bell) is written as \xNN, so the line cannot rewrite the user's terminal.
  std::string shown;
  for (const char c : message) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 && c != '\t') {
      shown += fmt::format("\\x{:02x}", byte);
    } else if (byte == 0x7f) {
      shown += "\\x7f";
    } else {
      shown += c;
    }
  }
  return shown;
}

}  // namespace

int reportError(const Error& error) {
  // An error may echo what was given (a 60 KB argument); one line stays readable.
  fmt::print(verbErr(), "autopar: error: {}\n", oneLine(error.message, 400));
  return kExitBadInput;
}

int reportDoesNotFit(const std::string& advice) {
  fmt::print(verbErr(), "autopar: {}\n", oneLine(advice, 4000));
  return kExitDoesNotFit;
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

/// The options whose value is a file a verb writes.
bool isOutputOption(std::string_view name) {
  static const std::set<std::string_view> kOutputs{
      "out", "report", "launch-script", "mindformers-yaml", "mindspore-strategy", "megatron-args"};
  return kOutputs.contains(name);
}

/// A verb that writes over one of its own inputs (`--out model.json --model model.json`, or two
/// outputs to one file) would lose it: refused, whatever path or link names the file twice.
Status checkOutputsAreNotInputs(const CLI::App& verb) {
  struct Named {
    std::string option;
    std::string path;
    bool exists = false;
    struct stat file {};
    std::string resolved;  ///< outputs: the path with its links resolved, existing or not
    [[nodiscard]] bool sameFile(const Named& other) const {
      return exists && other.exists && file.st_dev == other.file.st_dev &&
             file.st_ino == other.file.st_ino;
    }
  };
  std::vector<Named> outputs;
  std::vector<Named> inputs;
  for (const CLI::Option* option : verb.get_options()) {
    if (option->count() == 0 || option->get_lnames().empty()) continue;
    const std::string& name = option->get_lnames().front();
    for (const std::string& value : option->results()) {
      Named named;
      named.option = "--" + name;
      named.path = value;
      named.exists = ::stat(value.c_str(), &named.file) == 0;
      if (value == "-" || (named.exists && !S_ISREG(named.file.st_mode))) continue;
      if (!isOutputOption(name)) {
        if (named.exists) inputs.push_back(named);
        continue;
      }
      std::error_code ignored;
      named.resolved = std::filesystem::weakly_canonical(value, ignored).string();
      for (const Named& other : outputs) {
        if (other.resolved == named.resolved || other.sameFile(named)) {
          return Error{fmt::format("{} {}: is also {}'s file; give each output its own path",
                                   named.option, value, other.option)};
        }
      }
      outputs.push_back(named);
    }
  }
  for (const Named& output : outputs) {
    for (const Named& input : inputs) {
      if (output.sameFile(input)) {
        return Error{fmt::format(
            "{} {}: is the {} input; writing it would replace the input (give another path)",
            output.option, output.path, input.option)};
      }
    }
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
  // A missing or mistyped verb is named with the verbs there are (CLI11 would say only "A
  // subcommand is required").
  if (argc < 2 || argv[1][0] != '-') {
    std::vector<std::string> names;
    bool known = false;
    for (const CLI::App* verb : app.get_subcommands({})) {
      names.push_back(verb->get_name());
      known = known || (argc >= 2 && verb->check_name(argv[1]));
    }
    if (!known) {
      const std::string given = argc < 2 ? "no verb" : fmt::format("unknown verb '{}'", argv[1]);
      return reportError(Error{
          fmt::format("{}; expected one of {} (autopar --help)", given, fmt::join(names, ", "))});
    }
  }
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
  for (const CLI::App* verb : app.get_subcommands()) {
    if (auto status = checkOutputsAreNotInputs(*verb); !status) return reportError(status.error());
  }
  return action();
}

}  // namespace autopar::cli
