#include "layout/common_refinement.h"

#include <algorithm>
#include <functional>

namespace autopar::layout {

namespace {

/// Suffix products of a shape, outermost first: [4,2] -> {8,2,1}.
std::vector<int64_t> suffixProducts(const std::vector<int64_t>& shape) {
  std::vector<int64_t> products(shape.size() + 1, 1);
  for (size_t axis = shape.size(); axis-- > 0;) products[axis] = products[axis + 1] * shape[axis];
  return products;
}

/// For each axis of a matrix with suffix products `products`, the refined axes between the chain
/// positions of its start and end.
AxisRefinement mapAxes(const std::vector<int64_t>& products, const std::vector<int64_t>& chain) {
  auto position = [&](int64_t product) {
    return static_cast<int>(std::find(chain.begin(), chain.end(), product) - chain.begin());
  };
  AxisRefinement axes(products.size() - 1);
  for (size_t axis = 0; axis + 1 < products.size(); ++axis) {
    for (int refined = position(products[axis]); refined < position(products[axis + 1]);
         ++refined) {
      axes[axis].push_back(refined);
    }
  }
  return axes;
}

}  // namespace

std::optional<CommonRefinement> commonRefinement(const DeviceMatrix& source,
                                                 const DeviceMatrix& target) {
  if (source.ranks() != target.ranks()) return std::nullopt;
  const std::vector<int64_t> sourceProducts = suffixProducts(source.shape());
  const std::vector<int64_t> targetProducts = suffixProducts(target.shape());
  std::vector<int64_t> chain = sourceProducts;
  chain.insert(chain.end(), targetProducts.begin(), targetProducts.end());
  std::sort(chain.begin(), chain.end(), std::greater<>());
  chain.erase(std::unique(chain.begin(), chain.end()), chain.end());

  std::vector<int64_t> refinedShape;
  for (size_t i = 0; i + 1 < chain.size(); ++i) {
    if (chain[i] % chain[i + 1] != 0) return std::nullopt;
    refinedShape.push_back(chain[i] / chain[i + 1]);
  }
  return CommonRefinement{DeviceMatrix(std::move(refinedShape), source.ranks()),
                          mapAxes(sourceProducts, chain), mapAxes(targetProducts, chain)};
}

TensorLayout refineLayout(const TensorLayout& layout, const DeviceMatrix& refined,
                          const AxisRefinement& axes) {
  TensorLayout result = TensorLayout::replicated(refined, layout.shape);
  for (size_t dim = 0; dim < layout.dimAxes.size(); ++dim) {
    for (int axis : layout.dimAxes[dim]) {
      const auto& parts = axes[static_cast<size_t>(axis)];
      result.dimAxes[dim].insert(result.dimAxes[dim].end(), parts.begin(), parts.end());
    }
  }
  for (int axis : layout.partialAxes) {
    const auto& parts = axes[static_cast<size_t>(axis)];
    result.partialAxes.insert(result.partialAxes.end(), parts.begin(), parts.end());
  }
  std::sort(result.partialAxes.begin(), result.partialAxes.end());
  return result;
}

}  // namespace autopar::layout
