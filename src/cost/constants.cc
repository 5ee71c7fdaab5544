#include "cost/constants.h"

#include <fmt/format.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cost/cost_model_data.h"

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

CostConstants& active() {
  static CostConstants constants = [] {
    auto parsed = parseCostConstants(kCostModelJson);
    // The compiled-in file is checked by a unit test; a broken one cannot reach a release.
    return parsed ? *parsed : CostConstants{};
  }();
  return constants;
}

}  // namespace

const CostConstants& costConstants() { return active(); }

Expected<CostConstants> parseCostConstants(const std::string& text) {
  const auto document = nlohmann::json::parse(text, nullptr, false);
  if (document.is_discarded() || !document.is_object()) return Error{"expected a JSON object"};
  CostConstants constants;
  struct Field {
    const char* key;
    double upper;
    double* target;
  };
  const Field fields[] = {{"matmul_efficiency", 1, &constants.matmulEfficiency},
                          {"attention_efficiency", 1, &constants.attentionEfficiency},
                          {"vector_efficiency", 1, &constants.vectorEfficiency},
                          {"memory_efficiency", 1, &constants.memoryEfficiency},
                          {"tile_dim", 1e6, &constants.tileDim}};
  for (const Field& field : fields) {
    auto value = readShare(document, field.key, field.upper);
    if (!value) return value.error();
    *field.target = *value;
  }
  return constants;
}

Status useCostModelFile(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return Error{fmt::format("{}: cannot open file for reading", path)};
  std::ostringstream text;
  text << file.rdbuf();
  auto constants = parseCostConstants(text.str());
  if (!constants) return constants.error().in(path);
  active() = *constants;
  return {};
}

}  // namespace autopar::cost
