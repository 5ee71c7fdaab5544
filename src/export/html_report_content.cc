#include "export/html_report_content.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <set>

#include "export/megatron_args.h"
#include "export/mindformers_yaml.h"
#include "layout/strategy.h"
#include "planner/fit_advice.h"
#include "planner/inputs.h"

namespace autopar::exporters {

namespace {

/// Rows a plan's tables list at most; the rest are counted under the table.
constexpr size_t kMaxTableRows = 400;
/// Other shapes the candidate table lists after the leaders.
constexpr size_t kMaxShapeLeaders = 30;

/// ir::shapeName with the rest of the configuration: "TP 4 CP 2 PP 4 DP 2 MBS 1 SP VPP 2
/// interleaved, recompute none, ZeRO 1" (shapeName already names zero-bubble H1).
std::string describe(const ir::ParallelConfig& c) {
  std::string text = ir::shapeName(c);
  if (c.vpp > 1) text += fmt::format(" VPP {}", c.vpp);
  if (c.pp > 1 && !c.zeroBubble()) text += fmt::format(" {}", ir::scheduleName(c.schedule));
  return text + fmt::format(", recompute {}, ZeRO {}", ir::recomputeName(c.recompute), c.zero);
}

std::string percent(double fraction) { return fmt::format("{:.1f}%", 100 * fraction); }

std::vector<cost::MemoryBreakdown> stageMemory(const sim::StepEstimate& step) {
  std::vector<cost::MemoryBreakdown> memory;
  for (const auto& stage : step.stages) memory.push_back(stage.memory);
  return memory;
}

/// The timeline, the step's split and the memory of one evaluation.
Status fillStep(const planner::Evaluated& evaluated, HtmlReport& report) {
  auto timeline = sim::stepTimeline(evaluated.report, evaluated.pipeline);
  if (!timeline) return timeline.error();
  report.timeline = std::move(*timeline);
  const sim::StepEstimate& step = evaluated.estimate;
  report.stepSeconds = step.stepSeconds;
  report.stageMemory = stageMemory(step);
  report.summary.insert(
      report.summary.end(),
      {{"step time", planner::formatSeconds(step.stepSeconds)},
       {"compute", planner::formatSeconds(step.computeSeconds)},
       {"exposed communication", planner::formatSeconds(step.exposedCommunicationSeconds)},
       {"pipeline bubble",
        fmt::format("{} ({} of the busiest stage's work)",
                    planner::formatSeconds(step.bubbleSeconds), percent(step.bubbleFraction))},
       {"optimizer step", planner::formatSeconds(step.optimizerSeconds)}});
  return {};
}

void addMemorySummary(HtmlReport& report, bool fits) {
  int64_t peak = 0;
  for (const auto& memory : report.stageMemory) peak = std::max(peak, memory.total());
  report.summary.emplace_back(
      "peak memory", fmt::format("{} of {}{}: {}", planner::formatBytes(peak),
                                 planner::formatBytes(report.deviceMemoryBytes),
                                 report.memoryMarginBytes > 0
                                     ? fmt::format(" ({} kept free)",
                                                   planner::formatBytes(report.memoryMarginBytes))
                                     : "",
                                 fits ? "fits" : "DOES NOT FIT"));
}

/// The fullest stage's memory band and its verdict (planner/memory_band.h), where the band is
/// measured (a cost model without one gives a point, and no line).
void addMemoryBand(HtmlReport& report, int64_t lowBytes, int64_t highBytes, size_t stage,
                   std::string_view verdict) {
  if (lowBytes >= highBytes || verdict.empty()) return;
  report.summary.emplace_back(
      "memory band",
      fmt::format("{} - {} (stage {}, the measured error of its transient part): {}",
                  planner::formatBytes(lowBytes), planner::formatBytes(highBytes), stage, verdict));
}

/// The candidate table of a search: the ranked leaders (full model), the candidates the full
/// model found over memory, then the best screened candidate of every other parallel shape.
std::vector<ReportCandidate> searchCandidates(const planner::ConfigurationSearch& found,
                                              const SearchReportContext& context) {
  const search::HybridResult& result = found.hybrid;
  std::vector<ReportCandidate> rows;
  std::set<search::ShapeKey> listed;
  const double best = result.ranked.empty() ? 0 : result.ranked.front().second.stepSeconds;
  for (size_t i = 0; i < result.ranked.size() && static_cast<int>(i) < context.top; ++i) {
    const auto& [c, score] = result.ranked[i];
    listed.insert(search::shapeKey(c));
    rows.push_back(
        {describe(c), score.stepSeconds, score.peakBytes,
         i == 0 ? "chosen (full model)"
                : fmt::format("{} slower (full model)", percent(score.stepSeconds / best - 1))});
  }
  const int64_t usable = planner::usableMemoryBytes(found.cluster, found.best->memoryMarginBytes);
  for (const auto& [c, score] : result.overOnFull) {
    rows.push_back({describe(c), score.stepSeconds, score.peakBytes,
                    fmt::format("over memory by {} on the full model (the screen had it fit)",
                                planner::formatBytes(score.peakBytes - usable))});
  }
  size_t leaders = 0;
  for (const auto& [c, score] : result.shapeLeaders) {
    if (leaders == kMaxShapeLeaders) break;
    if (!listed.insert(search::shapeKey(c)).second) continue;
    ++leaders;
    const std::string verdict =
        score.fits ? fmt::format("its shape's fastest, {} slower than the fastest (closed form)",
                                 percent(score.stepSeconds / result.screenBestSeconds - 1))
                   : fmt::format("its shape's leanest, over memory by {} (closed form)",
                                 planner::formatBytes(score.peakBytes - usable));
    rows.push_back({describe(c), score.stepSeconds, score.peakBytes, verdict});
  }
  return rows;
}

/// The plan's op strategies, consecutive identical blocks folded.
/// A plan that does not fit: the changes that make it fit, fastest per sample first, each
/// planned by autopar (planner/fit_advice.h).
ReportTable fixTable(const plan::Plan& plan) {
  ReportTable table;
  table.caption =
      "Does not fit: changes that make it fit, each planned by autopar (the flags replace the "
      "same flags of the command)";
  table.columns = {"flags", "run-yaml keys", "step time", "samples per step", "peak memory"};
  for (const plan::FixRecord& fix : plan.fixes) {
    table.rows.push_back({fmt::format("{}", fmt::join(fix.flags, " ")), planner::fixYaml(fix),
                          planner::formatSeconds(fix.stepSeconds),
                          std::to_string(fix.samplesPerStep),
                          planner::formatBytes(fix.peakMemoryBytes)});
  }
  return table;
}

ReportTable strategyTable(const plan::Plan& plan) {
  ReportTable table{"Op strategies (consecutive identical blocks folded)",
                    {"blocks", "op", "kind", "strategy", "device matrix", "source", "stage"},
                    {},
                    0};
  for (const BlockRun& run : foldBlocks(plan)) {
    const std::string blocks =
        run.firstBlock.empty() ? "(untagged)"
        : run.repeats == 1
            ? run.firstBlock
            : fmt::format("{} .. {} ({} blocks)", run.firstBlock, run.lastBlock, run.repeats);
    for (const plan::OpRecord* op : run.ops) {
      if (table.rows.size() == kMaxTableRows) {
        ++table.omittedRows;
        continue;
      }
      table.rows.push_back({blocks, op->name, op->kind, layout::strategyToString(op->strategy),
                            fmt::format("[{}]", fmt::join(op->deviceMatrix, ",")),
                            op->strategySource, std::to_string(op->stage)});
    }
  }
  return table;
}

/// The plan's redistributions, the costliest first.
ReportTable redistributionTable(const plan::Plan& plan) {
  ReportTable table{"Redistributions (the costliest first)",
                    {"tensor", "from", "to", "direction", "steps", "bytes per device", "time"},
                    {},
                    0};
  std::vector<const plan::RedistributionRecord*> records;
  for (const auto& record : plan.redistributions) records.push_back(&record);
  std::stable_sort(records.begin(), records.end(),
                   [](const auto* a, const auto* b) { return a->seconds > b->seconds; });
  for (const plan::RedistributionRecord* record : records) {
    if (table.rows.size() == kMaxTableRows) {
      ++table.omittedRows;
      continue;
    }
    std::vector<std::string> steps;
    for (const auto& step : record->steps) steps.push_back(step.primitive);
    table.rows.push_back(
        {record->tensor, record->fromOp.empty() ? "(parameter or input)" : record->fromOp,
         record->toOp,
         record->gradientSync ? record->direction + ", gradient sync" : record->direction,
         fmt::format("{}", fmt::join(steps, ", ")), planner::formatBytes(record->bytesPerDevice),
         planner::formatSeconds(record->seconds)});
  }
  return table;
}

}  // namespace

Expected<HtmlReport> estimateHtmlReport(const planner::MegatronConfig& config,
                                        const planner::ConfigEstimate& estimate) {
  HtmlReport report;
  report.title =
      fmt::format("autopar estimate: {} on {} ({} x {})", config.model, estimate.cluster.name,
                  estimate.worldSize, estimate.cluster.device.name);
  report.summary = {
      {"configuration", describe(config)},
      {"batch",
       fmt::format("global batch {} = DP {} x micro-batch {} x {} micro-batches, "
                   "sequence {}",
                   config.gbs, config.dp, config.mbs, estimate.microBatches, estimate.sequence)},
      {"precision", config.precision}};
  if (Status filled = fillStep(estimate.evaluated, report); !filled) return filled.error();
  report.summary.insert(
      report.summary.end(),
      {{"throughput", fmt::format("{:.0f} tokens/s", estimate.tokensPerSecond)},
       {"model TFLOP/s per GPU",
        fmt::format("{:.4g} (MFU {})", estimate.tflopsPerGpu, percent(estimate.mfu))}});
  report.deviceMemoryBytes = estimate.cluster.device.memoryBytes;
  report.memoryMarginBytes = estimate.memoryMarginBytes;
  addMemorySummary(report, estimate.fits());
  if (const size_t fullest = estimate.fullestStage(); fullest < estimate.peakBands.size()) {
    addMemoryBand(report, estimate.peakBands[fullest].lowBytes,
                  estimate.peakBands[fullest].highBytes, fullest,
                  planner::memoryVerdictName(estimate.verdict()));
  }
  std::string megatron =
      argumentLines(megatronArguments(config, planner::layersPerVirtualStage(estimate)));
  for (const std::string& note : megatronNotes(config)) megatron += "\nnote: " + note;
  report.listings = {
      {"Megatron-LM arguments", megatron},
      {"MindSpore (MindFormers yaml)", mindformersParallelConfig(config, estimate.microBatches)}};
  return report;
}

Expected<HtmlReport> searchHtmlReport(const planner::ConfigurationSearch& found,
                                      const SearchReportContext& context) {
  auto report = estimateHtmlReport(*found.best, *found.estimate);
  if (!report) return report.error();
  const search::HybridResult& result = found.hybrid;
  report->title = fmt::format("autopar search: {} on {} ({} x {}), global batch {}", context.model,
                              found.cluster.name, found.cluster.numDevices,
                              found.cluster.device.name, context.globalBatch);
  report->summary.insert(
      report->summary.begin(),
      {"searched", fmt::format("{} shapes, {} configurations screened in closed form ({} fit), "
                               "{} evaluated on the full model ({} fit)",
                               result.shapes, result.screened, result.screenFits, result.refined,
                               result.ranked.size())});
  report->candidates = searchCandidates(found, context);
  report->candidatesCaption =
      "Candidates: the leaders on the full model, then each other parallel shape's best and why "
      "it lost";
  return report;
}

Expected<HtmlReport> sharedPlanHtmlReport(const planner::GroupSearch& search,
                                          const planner::SharedPlan& plan,
                                          const SearchReportContext& context) {
  HtmlReport report;
  std::string members;
  for (const planner::GroupOutcome& share : plan.shares) {
    members += fmt::format("{}{} ({} samples)", members.empty() ? "" : " + ", share.group.name,
                           share.samples);
  }
  report.title = fmt::format("autopar search: {} on {}, global batch {}: {} sharing the batch",
                             context.model, search.cluster, search.globalBatch, members);
  const planner::Throughput& throughput = plan.throughput;
  report.summary = {
      {"step time", planner::formatSeconds(throughput.stepSeconds)},
      {"slowest group", planner::formatSeconds(plan.slowestGroupSeconds)},
      {"gradient all-reduce across groups",
       fmt::format("{} over {}", planner::formatSeconds(plan.syncSeconds), plan.syncLink)},
      {"throughput", fmt::format("{:.0f} tokens/s", throughput.tokensPerSecond)}};
  if (throughput.dollarsPerHour > 0) {
    report.summary.emplace_back("price",
                                fmt::format("${:.2f} per hour", throughput.dollarsPerHour));
  }
  if (throughput.dollarsPerMillionTokens > 0) {
    report.summary.emplace_back(
        "cost", fmt::format("${:.3f} per million tokens", throughput.dollarsPerMillionTokens));
  }
  for (const planner::GroupOutcome& share : plan.shares) {
    auto section = estimateHtmlReport(*share.found->best, *share.found->estimate);
    if (!section) return section.error();
    section->title = fmt::format("{}: {} samples on {} x {}", share.group.name, share.samples,
                                 share.group.devices(), share.group.device);
    // The groups wait for the slowest, then all-reduce across groups: every stage's row ends in
    // that synchronisation, on the whole step's axis.
    for (std::vector<sim::TimelineBlock>& stage : section->timeline) {
      sim::TimelineBlock sync;
      sync.kind = sim::TimelineBlock::kGradientSync;
      sync.startSeconds = plan.slowestGroupSeconds;
      sync.endSeconds = throughput.stepSeconds;
      sync.communicationSeconds = plan.syncSeconds;
      stage.push_back(sync);
    }
    section->stepSeconds = throughput.stepSeconds;
    report.sections.push_back(std::move(*section));
  }
  return report;
}

Expected<HtmlReport> pipelinePlanHtmlReport(const planner::GroupSearch& search,
                                            const planner::SplitPipeline& pipeline,
                                            const SearchReportContext& context) {
  HtmlReport report;
  const cluster::DeviceGroup& front = search.groups[pipeline.front].group;
  const cluster::DeviceGroup& back = search.groups[pipeline.back].group;
  report.title = fmt::format(
      "autopar search: {} on {}, global batch {}: a pipeline of {} stages on {} then {} on {}",
      context.model, search.cluster, search.globalBatch, pipeline.frontStages, front.name,
      pipeline.config.pp - pipeline.frontStages, back.name);
  std::string layers;
  for (size_t s = 0; s < pipeline.layers.size(); ++s) {
    layers += fmt::format("{}stage {}: {} layers on {}", layers.empty() ? "" : "; ", s,
                          pipeline.layers[s], search.groups[pipeline.groupOf(s)].group.device);
  }
  auto timeline = sim::stepTimeline(pipeline.report, pipeline.pipeline);
  if (!timeline) return timeline.error();
  report.timeline = std::move(*timeline);
  report.stepSeconds = pipeline.step.stepSeconds;
  report.stageMemory = stageMemory(pipeline.step);
  report.deviceMemoryBytes =
      *std::max_element(pipeline.deviceBytes.begin(), pipeline.deviceBytes.end());
  report.stageDeviceBytes = pipeline.deviceBytes;
  report.summary = {
      {"step time", planner::formatSeconds(pipeline.step.stepSeconds)},
      {"pipeline bubble", planner::formatSeconds(pipeline.step.bubbleSeconds)},
      {"stages", layers},
      {"crossing between the groups",
       fmt::format("{} a micro-batch over {}", planner::formatSeconds(pipeline.boundarySeconds),
                   pipeline.link)},
      {"throughput", fmt::format("{:.0f} tokens/s", pipeline.throughput.tokensPerSecond)},
      {"memory", "each stage's row is marked at its own device's memory"}};
  if (pipeline.throughput.dollarsPerMillionTokens > 0) {
    report.summary.emplace_back("cost", fmt::format("${:.3f} per million tokens",
                                                    pipeline.throughput.dollarsPerMillionTokens));
  }
  return report;
}

Expected<HtmlReport> planHtmlReport(const plan::Plan& plan, const planner::Evaluated& evaluated,
                                    const ReportHeader& header, std::string_view unmet) {
  HtmlReport report;
  report.title = fmt::format("autopar plan: {} on {} ({} x {}), search {}", header.model,
                             header.cluster, plan.devices, header.deviceName, plan.search);
  report.summary.emplace_back(
      "pipeline", fmt::format("{} stages x {} chunks, {} micro-batches, {}", plan.pipeline.stages,
                              plan.pipeline.virtualStages, plan.pipeline.microBatches,
                              ir::scheduleName(plan.pipeline.schedule)));
  if (plan.estimate.samplesPerStep > 0) {
    report.summary.emplace_back("samples per step", std::to_string(plan.estimate.samplesPerStep));
  }
  if (!plan.dataParallelShares.empty()) {
    report.summary.emplace_back(
        "data-parallel shares",
        fmt::format("{} samples a step, in rank order (priced at the largest)",
                    fmt::join(plan.dataParallelShares, " + ")));
  }
  if (Status filled = fillStep(evaluated, report); !filled) return filled.error();
  if (plan.estimate.tokensPerSecond > 0) {
    report.summary.emplace_back("throughput",
                                fmt::format("{:.0f} tokens/s", plan.estimate.tokensPerSecond));
  }
  report.summary.emplace_back(
      "model TFLOP/s per device",
      fmt::format("{:.4g} (MFU {})", plan.estimate.tflopsPerDevice, percent(plan.estimate.mfu)));
  report.deviceMemoryBytes = plan.estimate.deviceMemoryBytes;
  addMemorySummary(report, plan.estimate.fits);
  addMemoryBand(report, plan.estimate.memoryBandLowBytes, plan.estimate.memoryBandHighBytes,
                static_cast<size_t>(plan.estimate.fullestStage()), plan.estimate.memoryVerdict);
  if (!plan.estimate.fits && plan.fixes.empty() && !unmet.empty()) {
    report.summary.emplace_back("no fix found", std::string(unmet));
  }
  if (!plan.fixes.empty()) report.tables.push_back(fixTable(plan));
  report.tables.push_back(strategyTable(plan));
  report.tables.push_back(redistributionTable(plan));
  return report;
}

Expected<HtmlReport> graphSearchHtmlReport(const planner::GraphSearch& found,
                                           const plan::Plan& plan,
                                           const SearchReportContext& context) {
  const ReportHeader header{context.model, found.cluster.name, found.cluster.device.name,
                            found.best->model.graph.parameterCount()};
  auto report = planHtmlReport(plan, *found.best, header);
  if (!report) return report.error();
  report->title = fmt::format("autopar search: {} on {} ({} x {}), global batch {}", context.model,
                              found.cluster.name, found.cluster.numDevices,
                              found.cluster.device.name, context.globalBatch);
  report->candidatesCaption = "Candidates: the configurations that fit, fastest first";
  const double best = found.ranked.empty() ? 0 : found.ranked.front().stepSeconds;
  for (size_t i = 0; i < found.ranked.size() && static_cast<int>(i) < context.top; ++i) {
    const planner::RankedGraphCandidate& ranked = found.ranked[i];
    const planner::GraphCandidate& c = ranked.candidate;
    report->candidates.push_back(
        {fmt::format("{} stages, {}, recompute {}", c.stages, ir::scheduleName(c.schedule),
                     ir::recomputeName(c.recompute)),
         ranked.stepSeconds, ranked.peakBytes,
         i == 0 ? "chosen" : fmt::format("{} slower", percent(ranked.stepSeconds / best - 1))});
  }
  return report;
}

}  // namespace autopar::exporters
