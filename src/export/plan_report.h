#pragma once
/// \file
/// The human-readable plan report `autopar plan` prints: strategies per block (consecutive blocks
/// with identical strategies folded into one), a summary of redistributions, and the estimate.

#include <string>
#include <vector>

#include "plan/plan.h"

namespace autopar::exporters {

struct ReportHeader {
  std::string model;
  std::string cluster;
  std::string deviceName;
  int64_t parameterCount = 0;
};

/// A run of ops sharing a block tag, in graph order; consecutive blocks of one family
/// ("llm.layer.") with identical strategies fold into one run of `repeats` blocks, holding the
/// first's ops.
struct BlockRun {
  std::string firstBlock;
  std::string lastBlock;
  int repeats = 1;
  std::vector<const plan::OpRecord*> ops;
};
std::vector<BlockRun> foldBlocks(const plan::Plan& plan);

std::string formatPlanReport(const plan::Plan& plan, const ReportHeader& header);

}  // namespace autopar::exporters
