#include "cost/constants.h"

#include <fmt/format.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cost/cost_model_data.h"
#include "util/text_file.h"

namespace autopar::cost {

namespace {

Expected<double> readShare(const nlohmann::json& document, const char* key, double upper) {
  if (!document.contains(key)) return Error{fmt::format("missing field '{}'", key)};
  const auto& value = document.at(key);
  if (!value.is_number() || value.get<double>() <= 0 || value.get<double>() > upper) {
    return Error{
        fmt::format("{}: expected a number in (0, {:g}], got {}", key, upper, value.dump())};
  }
  return value.get<double>();
}

}  // namespace

const CostModel& shippedCostModel() {
  static const CostModel shipped = [] {
    auto parsed = parseCostConstants(kCostModelJson);
    // The compiled-in file is checked by a unit test; a broken one cannot reach a release.
    return std::make_shared<const CostConstants>(parsed ? *parsed : CostConstants{});
  }();
  return shipped;
}

const CostConstants& CostConstants::forDevice(const std::string& device) const {
  if (auto it = devices.find(device); it != devices.end()) return it->second;
  // An architecture's overrides ("H100") hold for its every SKU ("H100-SXM5-80GB",
  // "H100-HBM2e-96GB-500W"): tiles, SM counts and kernels are the architecture's.
  const CostConstants* found = this;
  size_t longest = 0;
  for (const auto& [name, constants] : devices) {
    if (name.size() > longest && device.size() > name.size() && device.starts_with(name) &&
        device[name.size()] == '-') {
      found = &constants;
      longest = name.size();
    }
  }
  return *found;
}

namespace {

/// Reads the constants of `document` into `constants`; with `optional`, absent fields keep
/// their values (a device's overrides).
Status readConstants(const nlohmann::json& document, bool optional, CostConstants& constants) {
  for (const ConstantField& field : constantFields()) {
    if ((optional || field.optional) && !document.contains(field.key)) continue;
    auto value = readShare(document, field.key, field.upper);
    if (!value) return value.error();
    constants.*field.field = *value;
  }
  return {};
}

nlohmann::ordered_json constantsToJson(const CostConstants& constants) {
  nlohmann::ordered_json json;
  for (const ConstantField& field : constantFields()) {
    if (field.optional && constants.*field.field == 0) continue;
    json[field.key] = constants.*field.field;
  }
  return json;
}

}  // namespace

std::span<const ConstantField> constantFields() {
  static constexpr ConstantField kFields[] = {
      {"matmul_efficiency", 1, &CostConstants::matmulEfficiency},
      {"fp8_matmul_speedup", 4, &CostConstants::fp8MatmulSpeedup},
      {"attention_efficiency", 1, &CostConstants::attentionEfficiency},
      {"cudnn_attention_efficiency", 1, &CostConstants::cudnnAttentionEfficiency, true},
      {"flash1_attention_speed", 1, &CostConstants::flash1AttentionSpeed, true},
      {"vector_efficiency", 1, &CostConstants::vectorEfficiency},
      {"memory_efficiency", 1, &CostConstants::memoryEfficiency},
      {"tile_dim", 1e6, &CostConstants::tileDim},
      {"list_collective_copy_seconds", 1e-3, &CostConstants::listCollectiveCopySeconds},
      {"kernel_launch_seconds", 1e-3, &CostConstants::kernelLaunchSeconds},
      {"queued_kernel_seconds", 1e-3, &CostConstants::queuedKernelSeconds},
      {"cuda_context_bytes", 1e11, &CostConstants::cudaContextBytes, false, true},
      {"nccl_group_bytes", 1e11, &CostConstants::ncclGroupBytes, false, true},
      {"allocator_reserve", 1, &CostConstants::allocatorReserve, false, true},
      {"memory_band_below", 1, &CostConstants::memoryBandBelow, true, true},
      {"memory_band_above", 1, &CostConstants::memoryBandAbove, true, true}};
  return kFields;
}

std::string costConstantsToJson(const CostConstants& constants, const std::string& about) {
  nlohmann::ordered_json json{{"version", 2}, {"about", about}};
  json.update(constantsToJson(constants));
  if (!constants.devices.empty()) {
    nlohmann::ordered_json devices = nlohmann::ordered_json::object();
    for (const auto& [name, device] : constants.devices) devices[name] = constantsToJson(device);
    json["devices"] = std::move(devices);
  }
  return json.dump(2) + "\n";
}

Expected<CostConstants> parseCostConstants(const std::string& text) {
  const auto document = nlohmann::json::parse(text, nullptr, false);
  if (document.is_discarded() || !document.is_object()) return Error{"expected a JSON object"};
  CostConstants constants;
  if (auto status = readConstants(document, false, constants); !status) return status.error();
  if (!document.contains("devices")) return constants;
  const auto& devices = document.at("devices");
  if (!devices.is_object()) return Error{"devices: expected an object of device names"};
  for (const auto& [name, overrides] : devices.items()) {
    if (!overrides.is_object()) {
      return Error{fmt::format("devices.{}: expected an object of constants", name)};
    }
    CostConstants device = constants;
    if (auto status = readConstants(overrides, true, device); !status) {
      return status.error().in(fmt::format("devices.{}", name));
    }
    constants.devices.emplace(name, std::move(device));
  }
  return constants;
}

Expected<CostModel> readCostModelFile(const std::string& path) {
  auto text = readTextFile(path);
  if (!text) return text.error();
  auto constants = parseCostConstants(*text);
  if (!constants) return constants.error().in(path);
  return std::make_shared<const CostConstants>(std::move(*constants));
}

}  // namespace autopar::cost
