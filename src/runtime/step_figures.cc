#include "runtime/step_figures.h"

#include <algorithm>
#include <vector>

namespace autopar::runtime {

namespace {

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

}  // namespace

MedianFigures medianFigures(const RankResult& result) {
  MedianFigures figures;
  std::vector<double> forward, backward, activation;
  std::array<std::vector<double>, kParts> partForward, partBytes;
  for (size_t i = result.steps.size() > 1 ? 1 : 0; i < result.steps.size(); ++i) {
    const StepReport& step = result.steps[i];
    forward.push_back(step.forwardSeconds);
    backward.push_back(step.backwardSeconds);
    activation.push_back(static_cast<double>(step.activationBytes));
    for (size_t p = 0; p < step.parts.size(); ++p) {
      partForward[p].push_back(step.parts[p].forwardSeconds);
      partBytes[p].push_back(static_cast<double>(step.parts[p].keptBytes));
    }
  }
  figures.forward = median(forward);
  figures.backward = median(backward);
  figures.activation = median(activation);
  for (size_t p = 0; p < figures.parts.size(); ++p) {
    figures.parts[p] = {median(partForward[p]), static_cast<int64_t>(median(partBytes[p]))};
  }
  return figures;
}

}  // namespace autopar::runtime
