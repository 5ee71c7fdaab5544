/// `autopar models`, `autopar clusters` and `autopar frameworks`: the built-in presets.

#include <fmt/format.h>

#include "cli/verbs.h"
#include "export/preset_list.h"

namespace autopar::cli {

namespace {

int listModels(bool json) {
  fmt::print(verbOut(), "{}", exporters::formatModelPresets(json));
  return kExitOk;
}

int listClusters(bool json) {
  auto text = exporters::formatClusterPresets(json);
  if (!text) return reportError(text.error());
  fmt::print(verbOut(), "{}", *text);
  return kExitOk;
}

}  // namespace

void addListVerbs(CLI::App& app, Action& action) {
  auto modelsJson = std::make_shared<bool>(false);
  CLI::App* models = app.add_subcommand("models", "List the built-in model presets");
  models->add_flag("--json", *modelsJson, "print JSON");
  models->callback(
      [&action, modelsJson] { action = [modelsJson] { return listModels(*modelsJson); }; });

  auto clustersJson = std::make_shared<bool>(false);
  CLI::App* clusters = app.add_subcommand(
      "clusters", "List the built-in cluster presets (one node each; --nodes multiplies)");
  clusters->add_flag("--json", *clustersJson, "print JSON");
  clusters->callback(
      [&action, clustersJson] { action = [clustersJson] { return listClusters(*clustersJson); }; });

  auto markdown = std::make_shared<bool>(false);
  CLI::App* frameworks = app.add_subcommand(
      "frameworks", "List the framework profiles --framework takes (docs/frameworks.md)");
  frameworks->add_flag("--markdown", *markdown,
                       "print docs/frameworks.md's tables: the code-path switches and each "
                       "profile's settings");
  frameworks->callback([&action, markdown] {
    action = [markdown] {
      fmt::print(verbOut(), "{}", exporters::formatFrameworks(*markdown));
      return kExitOk;
    };
  });
}

}  // namespace autopar::cli
