#pragma once
/// \file
/// The inputs of `autopar layout` and `autopar redistribute` in the seeds' notation: shapes
/// ("[64,32],[32,128]"), tensor layouts (a device matrix, a tensor map whose axes count from the
/// right of the matrix, and partial-sum axes), and the one-op graph a strategy is shown on.
///   matrix [2,4], map [1,-1]: dim 0 split over the matrix's left axis (2), dim 1 whole.

#include <string>
#include <vector>

#include "ir/graph.h"
#include "layout/tensor_layout.h"
#include "util/expected.h"

namespace autopar::cli {

struct LayoutText {
  std::string matrix;   ///< "[2,4]"
  std::string map;      ///< "[1,-1]"; an entry may list axes, major first: "[[1,0],-1]"
  std::string partial;  ///< "[0]", or empty: no partial sums
};

/// "[64,32]" -> {64, 32}; errors name `option` ("--shape '[0]': expected positive integers").
Expected<ir::Shape> parseShapeList(const std::string& text, const std::string& option);

/// "[64,32],[32,128]" -> {{64,32},{32,128}} (--shapes).
Expected<std::vector<ir::Shape>> parseShapes(const std::string& text);

/// The layout of a tensor of `shape`; errors name --<side>-matrix, --<side>-map or
/// --<side>-partial, and a layout that does not fit the shape.
Expected<layout::TensorLayout> parseLayoutText(const LayoutText& text, const ir::Shape& shape,
                                               const std::string& side);

/// A one-op graph of `kindName` over fresh fp32 inputs in0, in1, ... of the given shapes.
Expected<ir::Graph> singleOpGraph(const std::string& kindName,
                                  const std::vector<ir::Shape>& shapes);

}  // namespace autopar::cli
