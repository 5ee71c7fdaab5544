#include "export/search_report.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <iterator>

#include "export/estimate_report.h"
#include "export/megatron_args.h"
#include "export/mindformers_yaml.h"
#include "export/plan_report.h"
#include "export/torchtitan_config.h"
#include "export/torchtitan_job.h"
#include "planner/inputs.h"

namespace autopar::exporters {

namespace {

using Out = std::back_insert_iterator<std::string>;

/// FSDP1's ShardingStrategy for a ZeRO stage.
std::string_view fsdpShardingStrategy(const planner::MegatronConfig& config) {
  return config.zero == 3 ? "FULL_SHARD" : config.zero == 2 ? "SHARD_GRAD_OP" : "NO_SHARD";
}

/// MPT's attn_config.attn_impl for the attention kernel (llmfoundry/models/layers/attention.py):
/// flash (flash-attn 2), triton (the Triton FlashAttention kernel, until v0.7.0), torch (the
/// score matrix in memory). No llm-foundry setting runs cuDNN's.
std::string_view mptAttnImpl(ir::AttentionKernel kernel) {
  switch (kernel) {
    case ir::AttentionKernel::kFlash1:
      return "triton";
    case ir::AttentionKernel::kUnfused:
      return "torch";
    case ir::AttentionKernel::kFlash:
    case ir::AttentionKernel::kCudnn:
      break;
  }
  return "flash";
}

/// The keys of an llm-foundry run yaml the configuration sets (scripts/train/yamls/pretrain/
/// and Composer's FSDPConfig, mosaicml/llm-foundry@8c8dd48f): the batch, the precision, FSDP's
/// sharding and activation checkpointing, the attention kernel and the loss.
std::string composerYaml(const planner::MegatronConfig& config) {
  const bool cudnn = config.codePath.attention == ir::AttentionKernel::kCudnn;
  return fmt::format(
      "global_train_batch_size: {}\ndevice_train_microbatch_size: {}\nprecision: amp_{}\n"
      "fsdp_config:\n  sharding_strategy: {}\n  mixed_precision: DEFAULT\n"
      "  activation_checkpointing: {}\nmodel:\n  attn_config:\n    attn_impl: {}{}\n"
      "  loss_fn: {}\n",
      config.gbs, config.mbs, config.precision, fsdpShardingStrategy(config),
      config.recompute == ir::Recompute::kFull ? "true" : "false",
      mptAttnImpl(config.codePath.attention),
      cudnn ? "  # llm-foundry has no cuDNN attention; flash runs FlashAttention-2" : "",
      config.codePath.loss == ir::LossKernel::kFused ? "fused_crossentropy" : "torch_crossentropy");
}

/// How many of the leaders' placements the report lists.
constexpr int kPlacedCandidates = 8;

/// The top-k table.
void formatRanking(const planner::ConfigurationSearch& found, const SearchReportContext& context,
                   Out out) {
  // The EP column only for a model with experts; the blocks column only with an op-level search
  // ("ilp" where its sharding was taken, "megatron" where Megatron-LM's annotation was faster).
  const bool experts = found.transformer.experts > 0;
  const bool opSearch = found.opSearch != planner::OpSearch::kMegatron;
  fmt::format_to(
      out,
      "{:>4} {:>3} {:>3} {:>3} {:>4} {}{:>4} {:>6} {:>4} {:>3} {:>10} {:>5} {:>11} {:>12} {:>6} "
      "{:>11}{}\n",
      "rank", "TP", "CP", "PP", "DP", experts ? fmt::format("{:>3} ", "EP") : "", "VPP", "sched",
      "MBS", "SP", "recompute", "ZeRO", "step", "tokens/s", "MFU", "peak",
      opSearch ? fmt::format(" {:>21}", "blocks") : "");
  // Every configuration does the same model FLOPs per step, so MFU scales as 1 / step time.
  const double mfuSeconds = found.estimate->mfu * found.estimate->stepSeconds;
  const auto& ranked = found.hybrid.ranked;
  bool anyTight = false;
  for (size_t i = 0; i < ranked.size() && static_cast<int>(i) < context.top; ++i) {
    const auto& [c, score] = ranked[i];
    const double tokens =
        static_cast<double>(context.globalBatch * found.sequence) / score.stepSeconds;
    const char* schedule = c.pp == 1 ? "-" : c.vpp > 1 ? "int" : c.zeroBubble() ? "zb-h1" : "1f1b";
    const std::string_view blocks =
        found.refined[i].opSearchTaken ? planner::opSearchName(found.opSearch) : "megatron";
    fmt::format_to(
        out,
        "{:>4} {:>3} {:>3} {:>3} {:>4} {}{:>4} {:>6} {:>4} {:>3} {:>10} {:>5} {:>11} {:>12.0f} "
        "{:>5.1f}% {:>11}{}\n",
        i + 1, c.tp, c.cp, c.pp, c.dp, experts ? fmt::format("{:>3} ", c.ep) : "", c.vpp, schedule,
        c.mbs, c.sequenceParallel ? "on" : "off", c.recompute, c.zero,
        planner::formatSeconds(score.stepSeconds), tokens, 100 * mfuSeconds / score.stepSeconds,
        planner::formatBytes(score.peakBytes) + (score.tight ? "*" : ""),
        opSearch ? fmt::format(" {:>21}", blocks) : "");
    anyTight = anyTight || score.tight;
  }
  if (anyTight) {
    fmt::format_to(out,
                   "* tight: the memory band (the estimate plus and less its measured error) "
                   "straddles the usable memory, so it may run out of memory; --memory-policy "
                   "safe ranks only configurations whose band fits\n");
  }
}

/// The graph search's ranking: stages, micro-batches, recompute, step, throughput, peak.
void formatGraphRanking(const planner::GraphSearch& found, int top, Out out) {
  fmt::format_to(out, "{:>4} {:>6} {:>6} {:>9} {:>11} {:>12} {:>11}\n", "rank", "stages", "sched",
                 "recompute", "step", "samples/s", "peak");
  for (size_t i = 0; i < found.ranked.size() && static_cast<int>(i) < top; ++i) {
    const auto& ranked = found.ranked[i];
    const double samples =
        static_cast<double>(found.batch * found.microBatches) / ranked.stepSeconds;
    const std::string schedule = ranked.candidate.stages == 1
                                     ? "-"
                                     : std::string(ir::scheduleName(ranked.candidate.schedule));
    fmt::format_to(out, "{:>4} {:>6} {:>6} {:>9} {:>11} {:>12.1f} {:>11}\n", i + 1,
                   ranked.candidate.stages, schedule, ranked.candidate.recompute,
                   planner::formatSeconds(ranked.stepSeconds), samples,
                   planner::formatBytes(ranked.peakBytes));
  }
}

}  // namespace

/// What the search did, the ranking, the leaders' placements and the winner's exports.
std::string formatSearchReport(const planner::ConfigurationSearch& found,
                               const SearchReportContext& context) {
  std::string text;
  auto out = std::back_inserter(text);
  const planner::MegatronConfig& best = *found.best;
  const planner::ConfigEstimate& estimate = *found.estimate;
  const auto& result = found.hybrid;
  fmt::format_to(out, "autopar search: {} on {} ({} x {}), global batch {}\n", context.model,
                 found.cluster.name, found.cluster.numDevices, found.cluster.device.name,
                 context.globalBatch);
  if (found.measured) {
    fmt::format_to(
        out,
        "block costs measured (--profile {}) for {} of {} block settings, analytic for the rest; "
        "ranked on the closed form\n",
        context.profilePath, found.measuredSettings, found.settings);
  }
  fmt::format_to(
      out,
      "{} shapes, {} configurations screened in closed form ({} fit, {} block probes), {} "
      "evaluated on the full model ({} fit), each also placed exactly where it pipelines ({} "
      "placed faster)\n\n",
      result.shapes, result.screened, result.screenFits, found.probes, result.refined,
      result.ranked.size(), found.placedFaster);
  if (found.opSearch != planner::OpSearch::kMegatron) {
    fmt::format_to(
        out,
        "op-level search: {} on each configuration's TP x CP submesh ({} block shardings "
        "searched); its sharding was faster than Megatron-LM's in {} of {} configurations "
        "evaluated "
        "on the full model\n\n",
        planner::opSearchName(found.opSearch), found.blockProbes, found.opSearchTaken,
        found.opSearchEvaluated);
  }
  formatRanking(found, context, out);
  std::vector<std::string> lines;
  for (size_t i = 0; i < found.refined.size() && static_cast<int>(i) < kPlacedCandidates; ++i) {
    const std::string& line = found.refined[i].placementLine;
    if (!line.empty()) lines.push_back(line);
  }
  if (!lines.empty()) {
    fmt::format_to(out, "\nNon-uniform placement of the leaders ({} with each):\n",
                   found.measured ? "the measured closed form" : "the full model evaluated");
    for (const auto& line : lines) fmt::format_to(out, "{}\n", line);
  }
  fmt::format_to(out, "\nBest configuration{}:\n\n",
                 found.placedBest ? " (layers placed non-uniformly)"
                 : found.vision() ? " (layers split by time)"
                                  : " (layers split evenly)");
  if (found.measured) {
    fmt::format_to(
        out,
        "step time from the measured blocks {}, {:.0f} tokens/s; the analytic cost model's "
        "estimate of the same configuration (it does not read --profile) follows\n\n",
        planner::formatSeconds(found.bestSeconds),
        static_cast<double>(context.globalBatch * found.sequence) / found.bestSeconds);
  }
  text += formatEstimateReport(best, estimate);
  out = std::back_inserter(text);
  // The launch settings of the framework the plan is for, and MindFormers' yaml beside them.
  switch (best.framework) {
    case cost::Framework::kTorchtitan:
      if (readsTorchtitanJob(best.frameworkRelease)) {
        fmt::format_to(out,
                       "\ntorchtitan v0.2.2 (its TOML job config; --launch-script writes the "
                       "whole job and the model's flavor):\n{}",
                       torchtitanJobSummary(best, estimate.sequence));
        break;
      }
      fmt::format_to(out,
                     "\ntorchtitan (its Trainer.Config; --launch-script writes the whole "
                     "configuration module):\n{}",
                     torchtitanSummary(best, estimate.sequence));
      break;
    case cost::Framework::kPytorchFsdp:
      fmt::format_to(out, "\nPyTorch FSDP: sharding_strategy={}\n", fsdpShardingStrategy(best));
      break;
    case cost::Framework::kComposer:
      fmt::format_to(out, "\nComposer (llm-foundry run yaml):\n{}", composerYaml(best));
      break;
    default:
      fmt::format_to(out, "\nMegatron-LM: {}\n",
                     megatronArguments(best, planner::layersPerVirtualStage(estimate)));
      for (const std::string& note : megatronNotes(best)) {
        fmt::format_to(out, "  note: {}\n", note);
      }
  }
  if (found.vision()) {
    // MindSpeed-MM places each tower's layers by its model JSON.
    fmt::format_to(
        out,
        "\nMindSpeed-MM (model json): image_encoder.vision_encoder.pipeline_num_layers [{}], "
        "text_decoder.pipeline_num_layers [{}]\n",
        fmt::join(planner::layersPerStage(estimate, best.pp, "vit").layers, ", "),
        fmt::join(planner::layersPerStage(estimate, best.pp, "llm").layers, ", "));
  }
  fmt::format_to(out, "\nMindSpore (MindFormers yaml):\n{}",
                 mindformersParallelConfig(best, estimate.microBatches));
  return text;
}

std::string formatGraphSearchReport(const planner::GraphSearch& found, const plan::Plan& plan,
                                    const SearchReportContext& context) {
  std::string text;
  auto out = std::back_inserter(text);
  fmt::format_to(
      out, "autopar search: {} on {} ({} x {}), global batch {}: {} micro-batches of {} samples\n",
      context.model, found.cluster.name, found.cluster.numDevices, found.cluster.device.name,
      context.globalBatch, found.microBatches, found.batch);
  if (found.blocks == 0) {
    fmt::format_to(
        out,
        "no block tags of the form <stack>.<index> (e.g. \"encoder.layer.3\"): the graph is "
        "searched as one block, without pipelining\n");
  } else {
    fmt::format_to(out, "{} blocks placed over pipeline stages\n", found.blocks);
  }
  fmt::format_to(
      out,
      "each stage's ops sharded over its devices by {}; {} configurations evaluated on the full "
      "model ({} fit{})\n\n",
      found.opSearch == planner::OpSearch::kMegatron
          ? std::string("the file's annotations, the rest data parallel (semi_auto)")
          : fmt::format("--op-search {}", planner::opSearchName(found.opSearch)),
      found.evaluated, found.ranked.size(),
      found.skipped > 0
          ? fmt::format("; {} refused, the first: {}", found.skipped, found.firstError)
          : "");
  formatGraphRanking(found, context.top, out);
  ReportHeader header{context.model, found.cluster.name, found.cluster.device.name,
                      found.best->model.graph.parameterCount()};
  fmt::format_to(out, "\nBest configuration:\n\n{}", formatPlanReport(plan, header));
  return text;
}

}  // namespace autopar::exporters
