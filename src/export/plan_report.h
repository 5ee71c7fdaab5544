#pragma once
/// \file
/// The human-readable plan report `autopar plan` prints: strategies per block (consecutive blocks
/// with identical strategies folded into one), a summary of redistributions, and the estimate.

#include <string>

#include "plan/plan.h"

namespace autopar::exporters {

struct ReportHeader {
  std::string model;
  std::string cluster;
  std::string deviceName;
  int64_t parameterCount = 0;
};

std::string formatPlanReport(const plan::Plan& plan, const ReportHeader& header);

}  // namespace autopar::exporters
