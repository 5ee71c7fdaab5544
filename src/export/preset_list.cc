#include "export/preset_list.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <nlohmann/json.hpp>

#include "cluster/cluster.h"
#include "cost/framework.h"
#include "frontend/model_presets.h"
#include "planner/inputs.h"

namespace autopar::exporters {

std::string formatModelPresets(bool json) {
  nlohmann::ordered_json list = nlohmann::json::array();
  std::string text = fmt::format("{:<18} {:>7} {:>7} {:>6} {:>5} {:>7} {:>8} {:>6}\n", "model",
                                 "layers", "hidden", "heads", "kv", "ffn", "vocab", "seq");
  for (const auto& name : frontend::modelPresetNames()) {
    auto config = frontend::transformerPreset(name);
    if (!config) {  // the seed-002 FFN is not a transformer
      list.push_back({{"name", name}, {"kind", "mlp"}});
      text += fmt::format("{:<18} seed 002 FFN: 784-512-256-128-64-10\n", name);
      continue;
    }
    list.push_back({{"name", name},
                    {"kind", "transformer"},
                    {"layers", config->layers},
                    {"hidden", config->hidden},
                    {"heads", config->heads},
                    {"kv_heads", config->kvHeads},
                    {"ffn", config->ffn},
                    {"vocab", config->vocab},
                    {"seq", config->seq}});
    text += fmt::format("{:<18} {:>7} {:>7} {:>6} {:>5} {:>7} {:>8} {:>6}\n", name, config->layers,
                        config->hidden, config->heads, config->kvHeads, config->ffn, config->vocab,
                        config->seq);
  }
  return json ? list.dump(2) + "\n" : text;
}

Expected<std::string> formatClusterPresets(bool json) {
  nlohmann::ordered_json list = nlohmann::json::array();
  std::string text;
  for (const auto& name : cluster::clusterPresetNames()) {
    auto preset = cluster::clusterPreset(name);
    if (!preset) return preset.error();
    nlohmann::ordered_json levels = nlohmann::json::array();
    std::vector<std::string> levelText;
    for (const auto& level : preset->levels) {
      levels.push_back({{"name", level.name},
                        {"domain_size", level.domainSize},
                        {"bytes_per_s", level.bytesPerSecond},
                        {"latency_s", level.latencySeconds}});
      levelText.push_back(fmt::format("{} {:.0f} GB/s", level.name, level.bytesPerSecond / 1e9));
    }
    list.push_back({{"name", name},
                    {"device", preset->device.name},
                    {"devices_per_node", preset->devicesPerNode},
                    {"memory_bytes", preset->device.memoryBytes},
                    {"levels", levels}});
    text += fmt::format("{:<18} {} x {:<18} {:>10}  {}\n", name, preset->numDevices,
                        preset->device.name, planner::formatBytes(preset->device.memoryBytes),
                        fmt::join(levelText, ", "));
  }
  return json ? list.dump(2) + "\n" : text;
}

namespace {

std::string_view attentionName(ir::AttentionKernel kernel) {
  switch (kernel) {
    case ir::AttentionKernel::kFlash:
      return "FA2";
    case ir::AttentionKernel::kFlash1:
      return "FA1";
    case ir::AttentionKernel::kCudnn:
      return "cuDNN";
    case ir::AttentionKernel::kUnfused:
      return "unfused";
  }
  return "?";
}

std::string switchTable() {
  std::string table = "| switch | yaml key | what it does |\n|---|---|---|\n";
  for (const cost::CodePathSwitch& codeSwitch : cost::codePathSwitches()) {
    table += fmt::format("| `--{}` | `{}` | {} |\n", codeSwitch.flag, cost::yamlKey(codeSwitch),
                         codeSwitch.doc);
  }
  return table;
}

std::string codePathTable() {
  std::string table = "| profile | attention kernel | loss |";
  std::string rule = "|---|---|---|";
  for (const cost::CodePathSwitch& codeSwitch : cost::codePathSwitches()) {
    table += fmt::format(" {} |", codeSwitch.column);
    rule += "---|";
  }
  table += "\n" + rule + "\n";
  for (size_t f = 0; f < cost::kFrameworkCount; ++f) {
    const cost::FrameworkProfile& profile = cost::frameworkProfile(static_cast<cost::Framework>(f));
    table +=
        fmt::format("| `{}` | {} | {} |", profile.name, attentionName(profile.codePath.attention),
                    cost::lossKernelName(profile.codePath.loss));
    for (const cost::CodePathSwitch& codeSwitch : cost::codePathSwitches()) {
      table += profile.codePath.*codeSwitch.field ? " yes |" : " no |";
    }
    table += "\n";
  }
  return table;
}

/// The releases each profile models, and its earlier releases' differences.
std::string releaseTable() {
  std::string table = "| `--framework` | models | earlier releases (`NAME@TAG`) |\n|---|---|---|\n";
  for (size_t f = 0; f < cost::kFrameworkCount; ++f) {
    const cost::FrameworkProfile& profile = cost::frameworkProfile(static_cast<cost::Framework>(f));
    std::vector<std::string> earlier;
    for (const cost::ProfileRelease& release : profile.earlier()) {
      earlier.push_back(fmt::format("`@{}`: {}; attention {}, loss {}", release.tag,
                                    release.release, attentionName(release.attention),
                                    cost::lossKernelName(release.loss)));
    }
    table += fmt::format("| `{}`, `{}@{}` | {} | {} |\n", profile.name, profile.name, profile.tag,
                         profile.models,
                         earlier.empty() ? "-" : fmt::format("{}", fmt::join(earlier, "; ")));
  }
  return table;
}

}  // namespace

std::string formatFrameworks(bool markdown) {
  if (markdown) return switchTable() + "\n" + codePathTable() + "\n" + releaseTable();
  std::string text;
  for (size_t f = 0; f < cost::kFrameworkCount; ++f) {
    const cost::FrameworkProfile& profile = cost::frameworkProfile(static_cast<cost::Framework>(f));
    text += fmt::format("{:<19} {}\n{:<19} models {} (@{})\n", profile.name, profile.summary, "",
                        profile.models, profile.tag);
    for (const cost::ProfileRelease& release : profile.earlier()) {
      text += fmt::format("{:<19} @{}: {}\n", "", release.tag, release.release);
    }
  }
  return text;
}

}  // namespace autopar::exporters
