#include "cost/training.h"

#include <fmt/format.h>

namespace autopar::cost {

Expected<LayerRecompute> parseLayerRecompute(std::string_view text) {
  if (text == "none") return LayerRecompute::kNone;
  if (text == "selective") return LayerRecompute::kSelective;
  if (text == "full") return LayerRecompute::kFull;
  return Error{fmt::format("'{}': expected none, selective or full", text)};
}

std::string_view layerRecomputeName(LayerRecompute recompute) {
  switch (recompute) {
    case LayerRecompute::kNone:
      return "none";
    case LayerRecompute::kSelective:
      return "selective";
    case LayerRecompute::kFull:
      return "full";
  }
  return "none";
}

Expected<Bucketing> parseBucketing(std::string_view text) {
  if (text == "none") return Bucketing::kNone;
  if (text == "size") return Bucketing::kBySize;
  if (text == "layer") return Bucketing::kByLayer;
  return Error{fmt::format("'{}': expected none, size or layer", text)};
}

std::string_view bucketingName(Bucketing bucketing) {
  switch (bucketing) {
    case Bucketing::kNone:
      return "none";
    case Bucketing::kBySize:
      return "size";
    case Bucketing::kByLayer:
      return "layer";
  }
  return "none";
}

}  // namespace autopar::cost
