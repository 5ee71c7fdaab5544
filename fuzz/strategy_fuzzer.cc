/// \file
/// Fuzz target: strategy strings in the seeds' notation, "((2,1),(1,4))". Two readers take them:
/// layout::parseStrategy (--shard, --strategy) and the graph JSON's "shard" string
/// (frontend::shardFromJson). Both must accept the same texts with the same cuts, and an
/// accepted strategy printed by strategyToString must read back to itself.

#include <nlohmann/json.hpp>
#include <vector>

#include "frontend/shard_json.h"
#include "fuzz_check.h"
#include "layout/strategy.h"

namespace {

using namespace autopar;

/// One input type per group at depth 2 of `text`, of the rank its commas suggest
/// ("((2,4),(8,))" -> ranks 2 and 1): the shapes shardFromJson needs to read a text that
/// parseStrategy rejected. A guess; a wrong one only makes shardFromJson reject as well.
std::vector<ir::TensorType> guessInputTypes(const std::string& text) {
  std::vector<ir::TensorType> types;
  int depth = 0;
  size_t items = 0;
  bool itemOpen = false;
  for (char c : text) {
    if (c == '(' || c == '[') {
      if (++depth == 2) items = 0, itemOpen = false;
    } else if (c == ')' || c == ']') {
      if (depth == 2) {
        ir::TensorType type;
        type.shape.assign(items + (itemOpen ? 1 : 0), 64);
        types.push_back(type);
      }
      --depth;
    } else if (depth == 2 && c == ',') {
      items += itemOpen ? 1 : 0;
      itemOpen = false;
    } else if (depth == 2 && c != ' ') {
      itemOpen = true;
    }
  }
  return types;
}

std::vector<ir::TensorType> inputTypesOf(const layout::Strategy& strategy) {
  std::vector<ir::TensorType> types;
  for (const auto& cuts : strategy) {
    ir::TensorType type;
    type.shape.assign(cuts.size(), 64);
    types.push_back(type);
  }
  return types;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text = fuzz::textOf(data, size);
  auto strategy = layout::parseStrategy(text);
  if (!strategy) {
    fuzz::checkError(strategy.error());
    auto shard = frontend::shardFromJson(nlohmann::json(text), "shard", guessInputTypes(text));
    fuzz::check(!shard.ok(), "the graph JSON's shard string accepts a strategy --shard rejects",
                strategy.error().message);
    return 0;
  }
  auto again = layout::parseStrategy(layout::strategyToString(*strategy));
  fuzz::check(again.ok() && *again == *strategy, "a printed strategy reads back differently");
  auto shard = frontend::shardFromJson(nlohmann::json(text), "shard", inputTypesOf(*strategy));
  fuzz::checkOk(shard, "the graph JSON's shard string rejects a strategy --shard accepts");
  fuzz::check(*shard == *strategy, "the two strategy readers read different cuts");
  return 0;
}
