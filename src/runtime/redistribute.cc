#include "runtime/redistribute.h"

#include <fmt/format.h>

#include <algorithm>

#include "layout/redistribution.h"

namespace autopar::runtime {

Expected<at::Tensor> redistributeBlock(ProcessGroups& groups, const cluster::Cluster& cluster,
                                       const BatchShares& shares, at::Tensor block,
                                       const layout::TensorLayout& from,
                                       const layout::TensorLayout& to, std::vector<int>* copies) {
  using layout::PrimitiveKind;
  if (from == to) return block;
  auto plan = layout::redistribute(from, to, cluster, 4);
  if (!plan) return plan.error();
  for (size_t s = 0; s < plan->steps.size(); ++s) {
    const layout::RedistStep& step = plan->steps[s];
    const int64_t position = step.matrix.positionOf(groups.rank());
    const std::vector<int> axis{step.axis};
    const std::vector<int> members = step.matrix.group(position, axis);
    const bool movesData =
        step.kind != PrimitiveKind::kAllReduce && step.kind != PrimitiveKind::kMakePartial;
    if (movesData && shares.crossesShares(step.matrix, step.axis, groups.rank())) {
      return Error{fmt::format(
          "{} along device-matrix axis {} moves a tensor between data-parallel replicas of "
          "uneven shares, and the runtime's collectives cut evenly: uneven shares need each "
          "tensor's batch to stay on its replica",
          layout::primitiveName(step.kind), step.axis)};
    }
    switch (step.kind) {
      case PrimitiveKind::kSplit:
        block = collective::split(groups, members, block, step.dim);
        break;
      case PrimitiveKind::kAllGather: {
        std::vector<int> sorted = members;
        std::sort(sorted.begin(), sorted.end());
        if (copies != nullptr && s + 1 == plan->steps.size() && sorted == *copies) {
          block = collective::allGatherSummed(groups, members, block, step.dim);
          copies->clear();
        } else {
          block = collective::allGather(groups, members, block, step.dim);
        }
        break;
      }
      case PrimitiveKind::kAllToAll:
        block = collective::split(groups, members,
                                  collective::allGather(groups, members, block, step.dim),
                                  step.splitDim);
        break;
      case PrimitiveKind::kReduceScatter:
        block = collective::reduceScatter(groups, members, block, step.dim);
        break;
      case PrimitiveKind::kAllReduce:
        block = collective::sum(groups, members, block);
        break;
      case PrimitiveKind::kMakePartial: {
        const bool first = step.matrix.coordinate(position)[static_cast<size_t>(step.axis)] == 0;
        block = collective::broadcast(groups, members, block) * (first ? 1.0 : 0.0);
        break;
      }
    }
  }
  return block;
}

}  // namespace autopar::runtime
