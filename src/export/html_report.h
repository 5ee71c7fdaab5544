#pragma once
/// \file
/// The report `--report FILE.html` writes (plan, estimate, search): one self-contained HTML page
/// with the step's pipeline timeline, each stage's memory against the device, the candidates and
/// why the others lost, and for a plan its op strategies and redistributions.
///
/// The charts are plain inline SVG written here, not a charting library: the page needs two
/// charts of rectangles (a Gantt chart and stacked bars), which SVG draws directly, so the file
/// carries no script, opens offline in any browser, and is byte-identical for the same plan
/// (a library inlined would add ~200 KB of JavaScript and draw at load time). Each block and
/// bar carries an SVG <title>, which browsers show as a tooltip.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "cost/memory.h"
#include "sim/step_estimate.h"

namespace autopar::exporters {

/// A row of the candidate table.
struct ReportCandidate {
  std::string configuration;  ///< "TP 4 PP 4 DP 4 VPP 2 MBS 1 SP, recompute none, ZeRO 1"
  double stepSeconds = 0;
  int64_t peakBytes = 0;
  /// "chosen", "0.3% slower", "over memory by 3.20 GiB", ...
  std::string verdict;
};

/// A table of the report: a caption, column names and rows of cells (text, escaped on output).
struct ReportTable {
  std::string caption;
  std::vector<std::string> columns;
  std::vector<std::vector<std::string>> rows;
  /// Rows left out of `rows` to keep the page small (said under the table).
  int64_t omittedRows = 0;
};

struct HtmlReport {
  std::string title;  ///< "autopar search: llama2-70b on dgx-a100-80g (64 x A100-SXM4-80GB)"
  /// The headline figures, in order: ("step time", "17.310 s"), ("MFU", "65.0%"), ...
  std::vector<std::pair<std::string, std::string>> summary;
  /// Per pipeline stage, its blocks in time order (sim::stepTimeline).
  std::vector<std::vector<sim::TimelineBlock>> timeline;
  double stepSeconds = 0;
  /// Per pipeline stage, its memory at its peak.
  std::vector<cost::MemoryBreakdown> stageMemory;
  int64_t deviceMemoryBytes = 0;
  /// Per stage, its device's memory, when the stages' devices differ (a pipeline across device
  /// kinds): each row is marked at its own capacity instead of one line for all.
  std::vector<int64_t> stageDeviceBytes;
  int64_t memoryMarginBytes = 0;
  std::vector<ReportCandidate> candidates;
  std::string candidatesCaption = "Candidates";
  /// Further tables (a plan's op strategies and redistributions, launch settings).
  std::vector<ReportTable> tables;
  /// Preformatted text shown as is (the export lines).
  std::vector<std::pair<std::string, std::string>> listings;
  /// A step run by several parts at once (a plan across device groups): each part's title,
  /// summary, timeline and memory, drawn in place of the page's own on a shared time axis (each
  /// part's stepSeconds).
  std::vector<HtmlReport> sections;
};

/// The page. Deterministic: the same report gives the same bytes.
std::string renderHtmlReport(const HtmlReport& report);

}  // namespace autopar::exporters
