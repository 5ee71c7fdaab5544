#include "layout/tensor_layout.h"

#include <algorithm>
#include <numeric>

namespace autopar::layout {

namespace {

std::string joinInts(const std::vector<int64_t>& values) {
  std::string out;
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out += ",";
    out += std::to_string(values[i]);
  }
  return out;
}

/// The seeds' number for `axis` on a matrix of `numAxes` axes: counted from the right.
int64_t seedsAxis(int numAxes, int axis) { return numAxes - 1 - axis; }

Status checkAxis(int axis, int numAxes, const std::string& where) {
  if (axis >= 0 && axis < numAxes) return {};
  return Error{where + ": axis " + std::to_string(axis) +
               " is out of range for a device matrix of " + std::to_string(numAxes) + " axes"};
}

/// Checks that every axis is in range and used once across dimAxes and partialAxes.
Status checkAxesUsedOnce(const TensorLayout& layout) {
  const int numAxes = layout.deviceMatrix.numAxes();
  std::vector<std::string> usedBy(static_cast<size_t>(numAxes));
  auto use = [&](int axis, const std::string& where) -> Status {
    if (auto inRange = checkAxis(axis, numAxes, where); !inRange) return inRange;
    std::string& previous = usedBy[static_cast<size_t>(axis)];
    if (!previous.empty()) {
      return Error{where + ": axis " + std::to_string(axis) + " is already used by " + previous};
    }
    previous = where;
    return {};
  };
  for (size_t dim = 0; dim < layout.dimAxes.size(); ++dim) {
    for (int axis : layout.dimAxes[dim]) {
      if (auto ok = use(axis, "dim " + std::to_string(dim)); !ok) return ok;
    }
  }
  for (int axis : layout.partialAxes) {
    if (auto ok = use(axis, "partialAxes"); !ok) return ok;
  }
  return {};
}

}  // namespace

Status TensorLayout::validate() const {
  if (dimAxes.size() != shape.size()) {
    return Error{"dimAxes has " + std::to_string(dimAxes.size()) + " entries but shape " +
                 ir::shapeToString(shape) + " has " + std::to_string(shape.size()) + " dims"};
  }
  if (!std::is_sorted(partialAxes.begin(), partialAxes.end())) {
    return Error{"partialAxes must be sorted"};
  }
  if (auto axesOk = checkAxesUsedOnce(*this); !axesOk) return axesOk;
  for (int dim = 0; dim < static_cast<int>(shape.size()); ++dim) {
    const int64_t size = shape[static_cast<size_t>(dim)];
    if (size < 0) {
      return Error{"dim " + std::to_string(dim) + " has negative size " + std::to_string(size)};
    }
    const int64_t cuts = cutsOfDim(dim);
    if (size % cuts != 0) {
      return Error{"dim " + std::to_string(dim) + " of size " + std::to_string(size) +
                   " does not divide into " + std::to_string(cuts) + " parts"};
    }
  }
  return {};
}

std::vector<int64_t> TensorLayout::tensorMap() const {
  std::vector<int64_t> map;
  map.reserve(dimAxes.size());
  for (const auto& axes : dimAxes) {
    map.push_back(axes.empty() ? -1 : seedsAxis(deviceMatrix.numAxes(), axes.front()));
  }
  return map;
}

int64_t TensorLayout::cutsOfDim(int dim) const {
  int64_t cuts = 1;
  for (int axis : dimAxes.at(static_cast<size_t>(dim))) cuts *= deviceMatrix.axisSize(axis);
  return cuts;
}

ir::Shape TensorLayout::sliceShape() const {
  ir::Shape slice = shape;
  for (int dim = 0; dim < static_cast<int>(slice.size()); ++dim) {
    slice[static_cast<size_t>(dim)] /= cutsOfDim(dim);
  }
  return slice;
}

int64_t TensorLayout::sliceElements() const { return ir::numElements(sliceShape()); }

std::vector<std::pair<int64_t, int64_t>> TensorLayout::sliceRanges(int64_t index) const {
  const std::vector<int64_t> coord = deviceMatrix.coordinate(index);
  const ir::Shape slice = sliceShape();
  std::vector<std::pair<int64_t, int64_t>> ranges;
  ranges.reserve(shape.size());
  for (size_t dim = 0; dim < shape.size(); ++dim) {
    // The dim's axes form a mixed-radix number, major axis first.
    int64_t part = 0;
    for (int axis : dimAxes[dim]) {
      part = part * deviceMatrix.axisSize(axis) + coord[static_cast<size_t>(axis)];
    }
    ranges.emplace_back(part * slice[dim], (part + 1) * slice[dim]);
  }
  return ranges;
}

std::vector<int> TensorLayout::replicaAxes() const {
  std::vector<bool> used(static_cast<size_t>(deviceMatrix.numAxes()), false);
  for (const auto& axes : dimAxes) {
    for (int axis : axes) used[static_cast<size_t>(axis)] = true;
  }
  for (int axis : partialAxes) used[static_cast<size_t>(axis)] = true;
  std::vector<int> free;
  for (int axis = 0; axis < deviceMatrix.numAxes(); ++axis) {
    if (!used[static_cast<size_t>(axis)] && deviceMatrix.axisSize(axis) > 1) free.push_back(axis);
  }
  return free;
}

TensorLayout TensorLayout::withoutPartial() const {
  TensorLayout layout = *this;
  layout.partialAxes.clear();
  return layout;
}

TensorLayout TensorLayout::replicated(const DeviceMatrix& mesh, ir::Shape shape) {
  TensorLayout layout;
  layout.deviceMatrix = mesh;
  layout.dimAxes.resize(shape.size());
  layout.shape = std::move(shape);
  return layout;
}

Expected<TensorLayout> TensorLayout::fromTensorMap(const DeviceMatrix& mesh,
                                                   const std::vector<int64_t>& tensorMap,
                                                   ir::Shape shape) {
  if (tensorMap.size() != shape.size()) {
    return Error{"tensor map [" + joinInts(tensorMap) + "] has " +
                 std::to_string(tensorMap.size()) + " entries but shape " +
                 ir::shapeToString(shape) + " has " + std::to_string(shape.size()) + " dims"};
  }
  TensorLayout layout = replicated(mesh, std::move(shape));
  for (size_t dim = 0; dim < tensorMap.size(); ++dim) {
    const int64_t entry = tensorMap[dim];
    if (entry == -1) continue;
    if (entry < 0 || entry >= mesh.numAxes()) {
      return Error{"tensor map [" + joinInts(tensorMap) + "]: entry " + std::to_string(entry) +
                   " of dim " + std::to_string(dim) + " is not -1 or an axis of a " +
                   std::to_string(mesh.numAxes()) + "-axis device matrix"};
    }
    layout.dimAxes[dim].push_back(static_cast<int>(seedsAxis(mesh.numAxes(), int(entry))));
  }
  if (auto ok = layout.validate(); !ok) return ok.error();
  return layout;
}

std::string TensorLayout::toString() const {
  const int numAxes = deviceMatrix.numAxes();
  std::string map;
  for (size_t dim = 0; dim < dimAxes.size(); ++dim) {
    if (dim > 0) map += ",";
    const auto& axes = dimAxes[dim];
    if (axes.empty()) {
      map += "-1";
    } else if (axes.size() == 1) {
      map += std::to_string(seedsAxis(numAxes, axes.front()));
    } else {
      std::vector<int64_t> numbered;
      for (int axis : axes) numbered.push_back(seedsAxis(numAxes, axis));
      map.append("(").append(joinInts(numbered)).append(")");
    }
  }
  std::string out = "{matrix=" + ir::shapeToString(deviceMatrix.shape());
  if (!deviceMatrix.hasDefaultRanks()) {
    out += " ranks=[" + joinInts({deviceMatrix.ranks().begin(), deviceMatrix.ranks().end()}) + "]";
  }
  out += " map=[" + map + "] shape=" + ir::shapeToString(shape);
  if (!partialAxes.empty()) {
    std::vector<int64_t> numbered;
    for (int axis : partialAxes) numbered.push_back(seedsAxis(numAxes, axis));
    std::reverse(numbered.begin(), numbered.end());
    out += " partial=[" + joinInts(numbered) + "]";
  }
  return out + "}";
}

}  // namespace autopar::layout
