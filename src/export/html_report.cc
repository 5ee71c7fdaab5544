#include "export/html_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <iterator>
#include <string_view>

#include "planner/inputs.h"

namespace autopar::exporters {

namespace {

using Out = std::back_insert_iterator<std::string>;

// The timeline's geometry, in SVG user units (pixels at 100% zoom).
constexpr double kLabelWidth = 84;
constexpr double kPlotWidth = 1100;
/// Room right of the plot for a memory bar's total ("1260.21 GiB"), which follows the bar's end
/// even when the bar is the widest.
constexpr double kTotalWidth = 96;
constexpr double kRowHeight = 26;
constexpr double kRowGap = 6;
constexpr double kAxisHeight = 30;
/// A block narrower than this gets no text label (its tooltip still names it).
constexpr double kLabelMinWidth = 24;

std::string escape(std::string_view text) {
  std::string escaped;
  escaped.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        escaped += "&amp;";
        break;
      case '<':
        escaped += "&lt;";
        break;
      case '>':
        escaped += "&gt;";
        break;
      case '"':
        escaped += "&quot;";
        break;
      default:
        escaped += c;
    }
  }
  return escaped;
}

struct BlockStyle {
  const char* cssClass;
  const char* name;
  const char* letter;
};

BlockStyle styleOf(sim::TimelineBlock::Kind kind) {
  switch (kind) {
    case sim::TimelineBlock::kForward:
      return {"fwd", "forward", "F"};
    case sim::TimelineBlock::kBackward:
      return {"bwd", "backward", "B"};
    case sim::TimelineBlock::kWeight:
      return {"wgt", "weight gradients", "W"};
    case sim::TimelineBlock::kGradientSync:
      return {"sync", "exposed gradient synchronisation", "grad sync"};
    case sim::TimelineBlock::kOptimizer:
      return {"opt", "optimizer step", "optimizer"};
    case sim::TimelineBlock::kParameterGather:
      return {"gather", "exposed parameter all-gather", "param gather"};
  }
  return {"fwd", "forward", "F"};
}

bool isAction(sim::TimelineBlock::Kind kind) {
  return kind == sim::TimelineBlock::kForward || kind == sim::TimelineBlock::kBackward ||
         kind == sim::TimelineBlock::kWeight;
}

/// Seconds between axis ticks: 1, 2 or 5 times a power of ten, about eight ticks in all.
double tickStep(double span) {
  const double raw = span / 8;
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  for (double factor : {1.0, 2.0, 5.0}) {
    if (factor * power >= raw) return factor * power;
  }
  return 10 * power;
}

/// An axis label: seconds, milliseconds or microseconds by the tick step, e.g. "2.5 s", "400 ms".
std::string tickLabel(double seconds, double step) {
  const auto [unit, factor] = step >= 1      ? std::pair{"s", 1.0}
                              : step >= 1e-3 ? std::pair{"ms", 1e3}
                                             : std::pair{"us", 1e6};
  // Rounded to the tick's precision so 0.30000000000000004 reads 0.3.
  return fmt::format("{:g} {}", std::round(seconds * factor * 1e6) / 1e6, unit);
}

void rect(Out out, std::string_view cssClass, double x, double y, double width, double height,
          const std::string& title) {
  fmt::format_to(out,
                 "<rect class=\"{}\" x=\"{:.2f}\" y=\"{:.2f}\" width=\"{:.2f}\" "
                 "height=\"{:.2f}\"><title>{}</title></rect>",
                 cssClass, x, y, std::max(width, 0.0), height, escape(title));
}

std::string blockTitle(int stage, const sim::TimelineBlock& block) {
  const BlockStyle style = styleOf(block.kind);
  std::string title =
      isAction(block.kind)
          ? fmt::format("stage {}: {} of micro-batch {}{}", stage, style.name, block.microBatch,
                        block.chunk > 0 ? fmt::format(", chunk {}", block.chunk) : "")
          : fmt::format("stage {}: {}", stage, style.name);
  title += fmt::format(", {} to {} ({})", planner::formatSeconds(block.startSeconds),
                       planner::formatSeconds(block.endSeconds),
                       planner::formatSeconds(block.endSeconds - block.startSeconds));
  if (isAction(block.kind) && block.communicationSeconds > 0) {
    title +=
        fmt::format(", of it communication {}", planner::formatSeconds(block.communicationSeconds));
  }
  return title;
}

/// One stage's row: its blocks, the communication part of each, and its idle gaps (bubbles).
void timelineRow(Out out, int stage, const std::vector<sim::TimelineBlock>& blocks, double y,
                 double scale, double stepSeconds) {
  fmt::format_to(out, "<g class=\"stage\" data-stage=\"{}\">", stage);
  fmt::format_to(out, "<text class=\"label\" x=\"{:.2f}\" y=\"{:.2f}\">stage {}</text>",
                 kLabelWidth - 8, y + kRowHeight / 2 + 4, stage);
  double at = 0;
  auto bubble = [&](double until) {
    if (until - at <= 1e-12) return;
    rect(out, "idle", kLabelWidth + at * scale, y, (until - at) * scale, kRowHeight,
         fmt::format("stage {}: idle (bubble) {}", stage, planner::formatSeconds(until - at)));
  };
  for (const sim::TimelineBlock& block : blocks) {
    bubble(block.startSeconds);
    const BlockStyle style = styleOf(block.kind);
    const double x = kLabelWidth + block.startSeconds * scale;
    const double width = (block.endSeconds - block.startSeconds) * scale;
    // A stage's later model chunks (interleaved) are drawn lighter.
    rect(out, fmt::format("blk {}{}", style.cssClass, block.chunk % 2 == 1 ? " odd" : ""), x, y,
         width, kRowHeight, blockTitle(stage, block));
    if (isAction(block.kind) && block.communicationSeconds > 0) {
      const double comm = block.communicationSeconds * scale;
      rect(out, "comm", x + width - comm, y + kRowHeight * 0.6, comm, kRowHeight * 0.4,
           fmt::format("stage {}: communication in this {}, {}", stage, style.name,
                       planner::formatSeconds(block.communicationSeconds)));
    }
    if (width >= kLabelMinWidth && isAction(block.kind)) {
      fmt::format_to(out, "<text class=\"in\" x=\"{:.2f}\" y=\"{:.2f}\">{}{}</text>", x + width / 2,
                     y + kRowHeight / 2 + 4, style.letter, block.microBatch);
    }
    at = std::max(at, block.endSeconds);
  }
  bubble(stepSeconds);
  fmt::format_to(out, "</g>");
}

void timelineChart(const HtmlReport& report, Out out, const std::string& id) {
  const auto stages = static_cast<double>(report.timeline.size());
  const double height = kAxisHeight + stages * (kRowHeight + kRowGap);
  const double span = report.stepSeconds > 0 ? report.stepSeconds : 1;
  const double scale = kPlotWidth / span;
  fmt::format_to(out,
                 "<svg id=\"{2}\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{0:.0f}\" "
                 "height=\"{1:.0f}\" viewBox=\"0 0 {0:.0f} {1:.0f}\">",
                 kLabelWidth + kPlotWidth + 16, height, id);
  for (size_t s = 0; s < report.timeline.size(); ++s) {
    timelineRow(out, static_cast<int>(s), report.timeline[s],
                static_cast<double>(s) * (kRowHeight + kRowGap), scale, report.stepSeconds);
  }
  const double axisY = stages * (kRowHeight + kRowGap);
  fmt::format_to(out,
                 "<g class=\"axis\"><line x1=\"{0:.2f}\" y1=\"{1:.2f}\" x2=\"{2:.2f}\" "
                 "y2=\"{1:.2f}\"/>",
                 kLabelWidth, axisY, kLabelWidth + kPlotWidth);
  const double step = tickStep(span);
  for (int tick = 0; tick * step <= span * (1 + 1e-9); ++tick) {
    const double t = tick * step;
    const double x = kLabelWidth + t * scale;
    fmt::format_to(out,
                   "<line x1=\"{0:.2f}\" y1=\"{1:.2f}\" x2=\"{0:.2f}\" y2=\"{2:.2f}\"/>"
                   "<text x=\"{0:.2f}\" y=\"{3:.2f}\">{4}</text>",
                   x, axisY, axisY + 5, axisY + 18, tickLabel(t, step));
  }
  fmt::format_to(out, "</g></svg>\n");
}

struct MemoryPart {
  const char* cssClass;
  const char* name;
  int64_t cost::MemoryBreakdown::*bytes;
};

constexpr std::array<MemoryPart, 7> kMemoryParts{{
    {"m-param", "parameters", &cost::MemoryBreakdown::parameterBytes},
    {"m-grad", "gradients", &cost::MemoryBreakdown::gradientBytes},
    {"m-opt", "optimizer states", &cost::MemoryBreakdown::optimizerBytes},
    {"m-act", "activations", &cost::MemoryBreakdown::activationBytes},
    {"m-work", "backward workspace", &cost::MemoryBreakdown::workspaceBytes},
    {"m-comm", "communication buffers", &cost::MemoryBreakdown::communicationBytes},
    {"m-run", "runtime (CUDA context, NCCL, allocator reserve)",
     &cost::MemoryBreakdown::runtimeBytes},
}};

void memoryChart(const HtmlReport& report, Out out, const std::string& id) {
  int64_t widest = report.deviceMemoryBytes;
  for (const auto& memory : report.stageMemory) widest = std::max(widest, memory.total());
  for (int64_t bytes : report.stageDeviceBytes) widest = std::max(widest, bytes);
  const double scale = widest > 0 ? kPlotWidth / static_cast<double>(widest) : 0;
  const double rows = static_cast<double>(report.stageMemory.size());
  const double height = kAxisHeight + 14 + rows * (kRowHeight + kRowGap);
  fmt::format_to(out,
                 "<svg id=\"{2}\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{0:.0f}\" "
                 "height=\"{1:.0f}\" viewBox=\"0 0 {0:.0f} {1:.0f}\">",
                 kLabelWidth + kPlotWidth + kTotalWidth, height, id);
  for (size_t s = 0; s < report.stageMemory.size(); ++s) {
    const cost::MemoryBreakdown& memory = report.stageMemory[s];
    const double y = static_cast<double>(s) * (kRowHeight + kRowGap);
    fmt::format_to(out, "<g class=\"stage-memory\" data-stage=\"{}\">", s);
    fmt::format_to(out, "<text class=\"label\" x=\"{:.2f}\" y=\"{:.2f}\">stage {}</text>",
                   kLabelWidth - 8, y + kRowHeight / 2 + 4, s);
    double x = kLabelWidth;
    for (const MemoryPart& part : kMemoryParts) {
      const int64_t bytes = memory.*part.bytes;
      if (bytes <= 0) continue;
      const double width = static_cast<double>(bytes) * scale;
      rect(out, part.cssClass, x, y, width, kRowHeight,
           fmt::format("stage {}: {} {}", s, part.name, planner::formatBytes(bytes)));
      x += width;
    }
    fmt::format_to(out, "<text class=\"total\" x=\"{:.2f}\" y=\"{:.2f}\">{}</text>", x + 4,
                   y + kRowHeight / 2 + 4, planner::formatBytes(memory.total()));
    if (s < report.stageDeviceBytes.size()) {
      // Stages on devices of different sizes: each row's own capacity.
      const double capacity = kLabelWidth + static_cast<double>(report.stageDeviceBytes[s]) * scale;
      fmt::format_to(out,
                     "<g class=\"capacity\"><line x1=\"{0:.2f}\" y1=\"{1:.2f}\" x2=\"{0:.2f}\" "
                     "y2=\"{2:.2f}\"><title>stage {3}: device {4}</title></line></g>",
                     capacity, y - 2, y + kRowHeight + 2, s,
                     planner::formatBytes(report.stageDeviceBytes[s]));
    }
    fmt::format_to(out, "</g>");
  }
  const double bottom = rows * (kRowHeight + kRowGap);
  auto limit = [&](std::string_view cssClass, int64_t bytes, double labelY,
                   const std::string& label) {
    const double x = kLabelWidth + static_cast<double>(bytes) * scale;
    fmt::format_to(out,
                   "<g class=\"{0}\"><line x1=\"{1:.2f}\" y1=\"0\" x2=\"{1:.2f}\" y2=\"{2:.2f}\"/>"
                   "<text x=\"{1:.2f}\" y=\"{3:.2f}\">{4}</text></g>",
                   cssClass, x, bottom, labelY, escape(label));
  };
  if (report.stageDeviceBytes.empty()) {
    limit("capacity", report.deviceMemoryBytes, bottom + 18,
          fmt::format("device {}", planner::formatBytes(report.deviceMemoryBytes)));
  }
  if (report.memoryMarginBytes > 0) {
    limit("margin", report.deviceMemoryBytes - report.memoryMarginBytes, bottom + 32,
          fmt::format("less margin {}", planner::formatBytes(report.memoryMarginBytes)));
  }
  fmt::format_to(out, "</svg>\n");
}

void legend(Out out, const std::vector<std::pair<const char*, const char*>>& entries) {
  fmt::format_to(out, "<p class=\"legend\">");
  for (const auto& [cssClass, name] : entries) {
    fmt::format_to(out,
                   "<span><svg width=\"14\" height=\"12\"><rect class=\"{}\" width=\"14\" "
                   "height=\"12\"/></svg> {}</span>",
                   cssClass, name);
  }
  fmt::format_to(out, "</p>\n");
}

void table(Out out, const ReportTable& table, std::string_view id) {
  fmt::format_to(out, "<table id=\"{}\"><caption>{}</caption><tr>", id, escape(table.caption));
  for (const auto& column : table.columns) fmt::format_to(out, "<th>{}</th>", escape(column));
  fmt::format_to(out, "</tr>\n");
  for (const auto& row : table.rows) {
    fmt::format_to(out, "<tr>");
    for (const auto& cell : row) fmt::format_to(out, "<td>{}</td>", escape(cell));
    fmt::format_to(out, "</tr>\n");
  }
  fmt::format_to(out, "</table>\n");
  if (table.omittedRows > 0) {
    fmt::format_to(out, "<p class=\"note\">{} more rows left out.</p>\n", table.omittedRows);
  }
}

ReportTable candidateTable(const HtmlReport& report) {
  const std::vector<ReportCandidate>& candidates = report.candidates;
  ReportTable result{
      report.candidatesCaption, {"#", "configuration", "step", "peak memory", "verdict"}, {}, 0};
  for (size_t i = 0; i < candidates.size(); ++i) {
    const ReportCandidate& c = candidates[i];
    result.rows.push_back({std::to_string(i + 1), c.configuration,
                           planner::formatSeconds(c.stepSeconds), planner::formatBytes(c.peakBytes),
                           c.verdict});
  }
  return result;
}

constexpr std::string_view kStyle = R"(<style>
body { font: 14px/1.4 "DejaVu Sans", sans-serif; margin: 24px; color: #222; }
h1 { font-size: 20px; } h2 { font-size: 16px; margin-top: 28px; }
dl.summary { display: grid; grid-template-columns: max-content max-content; gap: 2px 16px; }
dl.summary dt { color: #555; } dl.summary dd { margin: 0; font-weight: bold; }
svg text { font: 11px "DejaVu Sans", sans-serif; }
text.label { text-anchor: end; } text.in { text-anchor: middle; fill: #fff; }
text.total { fill: #222; } g.axis line { stroke: #888; } g.axis text { text-anchor: middle; }
.fwd { fill: #4e79a7; } .bwd { fill: #59a14f; } .wgt { fill: #9c755f; }
.sync { fill: #f28e2b; } .opt { fill: #b07aa1; } .gather { fill: #e15759; }
.comm { fill: #222; opacity: 0.45; } .idle { fill: #e6e6e6; }
rect.blk { stroke: #fff; stroke-width: 0.5; } rect.odd { opacity: 0.7; }
.m-param { fill: #2f4b7c; } .m-grad { fill: #76b7b2; } .m-opt { fill: #edc948; }
.m-act { fill: #59a14f; } .m-work { fill: #9c755f; } .m-comm { fill: #f28e2b; }
.m-run { fill: #bab0ac; }
g.capacity line { stroke: #d62728; stroke-width: 2; }
g.margin line { stroke: #d62728; stroke-dasharray: 4 3; }
g.capacity text, g.margin text { fill: #d62728; text-anchor: end; }
p.legend span { margin-right: 14px; white-space: nowrap; }
table { border-collapse: collapse; margin: 8px 0; }
caption { text-align: left; font-weight: bold; font-size: 16px; padding: 20px 0 8px; }
th, td { border: 1px solid #ccc; padding: 3px 8px; text-align: left; white-space: nowrap; }
th { background: #f3f3f3; } p.note { color: #555; }
pre { background: #f6f6f6; padding: 8px; overflow-x: auto; }
</style>
)";

/// A step's timeline and its memory per stage, under `heading` tags; `idSuffix` keeps the
/// charts' ids unique when a page draws several steps.
void stepCharts(const HtmlReport& report, Out out, std::string_view heading,
                const std::string& idSuffix) {
  fmt::format_to(out, "<{0}>Pipeline timeline of one step</{0}>\n", heading);
  legend(out, {{"fwd", "forward"},
               {"bwd", "backward (recompute included)"},
               {"wgt", "weight gradients (zero-bubble W)"},
               {"comm", "exposed communication within a block"},
               {"sync", "gradient sync"},
               {"opt", "optimizer"},
               {"gather", "parameter all-gather"},
               {"idle", "bubble"}});
  timelineChart(report, out, "timeline" + idSuffix);
  fmt::format_to(out, "<{0}>Memory per stage at its peak</{0}>\n", heading);
  legend(out, {{"m-param", "parameters"},
               {"m-grad", "gradients"},
               {"m-opt", "optimizer states"},
               {"m-act", "activations"},
               {"m-work", "workspace"},
               {"m-comm", "communication buffers"},
               {"m-run", "runtime"}});
  memoryChart(report, out, "memory" + idSuffix);
}

}  // namespace

std::string renderHtmlReport(const HtmlReport& report) {
  std::string page;
  auto out = std::back_inserter(page);
  fmt::format_to(out,
                 "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
                 "<title>{}</title>\n{}</head>\n<body>\n<h1>{}</h1>\n<dl class=\"summary\">",
                 escape(report.title), kStyle, escape(report.title));
  for (const auto& [name, value] : report.summary) {
    fmt::format_to(out, "<dt>{}</dt><dd>{}</dd>", escape(name), escape(value));
  }
  fmt::format_to(out, "</dl>\n");
  if (report.sections.empty()) stepCharts(report, out, "h2", "");
  for (size_t i = 0; i < report.sections.size(); ++i) {
    const HtmlReport& section = report.sections[i];
    fmt::format_to(out, "<h2>{}</h2>\n<dl class=\"summary\">", escape(section.title));
    for (const auto& [name, value] : section.summary) {
      fmt::format_to(out, "<dt>{}</dt><dd>{}</dd>", escape(name), escape(value));
    }
    fmt::format_to(out, "</dl>\n");
    stepCharts(section, out, "h3", fmt::format("-{}", i));
  }
  if (!report.candidates.empty()) table(out, candidateTable(report), "candidates");
  for (size_t i = 0; i < report.tables.size(); ++i) {
    table(out, report.tables[i], fmt::format("table{}", i));
  }
  for (const auto& [caption, text] : report.listings) {
    fmt::format_to(out, "<h2>{}</h2>\n<pre>{}</pre>\n", escape(caption), escape(text));
  }
  fmt::format_to(out, "</body>\n</html>\n");
  return page;
}

}  // namespace autopar::exporters
