#include "frontend/training_log.h"

#include <fmt/format.h>

#include <regex>

namespace autopar::frontend {

namespace {

constexpr double kMaxStepSeconds = 1e6;
constexpr double kMaxPeakGib = 1e5;
constexpr double kMaxTokensPerSecond = 1e9;
constexpr double kMebibytesPerGib = 1024;

/// The line without terminal colour codes (torchtitan colours its metrics).
std::string withoutColours(const std::string& line) {
  static const std::regex colour("\x1b\\[[0-9;]*m");
  return std::regex_replace(line, colour, "");
}

/// The number in `match` (thousands separators allowed), checked against (0, upper].
Expected<double> figure(const std::string& text, double upper, const char* what) {
  std::string digits;
  for (char c : text) {
    if (c != ',') digits += c;
  }
  double value = 0;
  try {
    value = std::stod(digits);
  } catch (const std::exception&) {
    return Error{fmt::format("{} '{}': expected a number", what, text)};
  }
  if (!(value > 0) || value > upper) {
    return Error{fmt::format("{} {}: expected a number in (0, {:g}]", what, text, upper)};
  }
  return value;
}

}  // namespace

Expected<TrainingLogFigures> readTrainingLog(const std::vector<std::string>& lines) {
  static const std::regex megatronStep(R"(elapsed time per iteration \(ms\):\s*([0-9.,]+))");
  static const std::regex megatronMemory(R"(memory \(MB\).*max reserved:\s*([0-9.,]+))");
  static const std::regex titanMemory(R"(memory:\s*([0-9.,]+)\s*GiB)");
  static const std::regex titanTps(R"(\btps:\s*([0-9.,]+))");
  TrainingLogFigures figures;
  for (const std::string& raw : lines) {
    const std::string line = withoutColours(raw);
    std::smatch match;
    if (std::regex_search(line, match, megatronStep)) {
      auto ms = figure(match[1], kMaxStepSeconds * 1000, "elapsed time per iteration (ms)");
      if (!ms) return ms.error();
      figures.stepSeconds = *ms / 1000;
    }
    if (std::regex_search(line, match, megatronMemory)) {
      auto mib = figure(match[1], kMaxPeakGib * kMebibytesPerGib, "max reserved (MB)");
      if (!mib) return mib.error();
      figures.peakGib = *mib / kMebibytesPerGib;
    } else if (std::regex_search(line, match, titanMemory)) {
      auto gib = figure(match[1], kMaxPeakGib, "memory (GiB)");
      if (!gib) return gib.error();
      figures.peakGib = *gib;
    }
    if (std::regex_search(line, match, titanTps)) {
      auto tps = figure(match[1], kMaxTokensPerSecond, "tps");
      if (!tps) return tps.error();
      figures.tokensPerSecondPerDevice = *tps;
    }
  }
  if (figures.stepSeconds == 0 && figures.peakGib == 0 && figures.tokensPerSecondPerDevice == 0) {
    return Error{
        "expected a Megatron-LM line (elapsed time per iteration (ms), memory (MB) ... max "
        "reserved) or a torchtitan line (memory: ...GiB, tps: ...)"};
  }
  return figures;
}

}  // namespace autopar::frontend
