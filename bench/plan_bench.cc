// Benchmarks of planning: sharding a preset's full operator graph and costing it (semi-auto,
// Megatron-style tensor parallelism 8), and the searches, by model size and device count.
// Run: build with -DAUTOPAR_BUILD_BENCHMARKS=ON, then build/release/plan_bench.

#include <benchmark/benchmark.h>

#include <array>
#include <numeric>

#include "cluster/cluster.h"
#include "cluster/collective.h"
#include "cost/graph_cost.h"
#include "frontend/model_presets.h"
#include "frontend/transformer.h"
#include "planner/configuration/configuration_estimate.h"
#include "planner/configuration/configuration_search.h"
#include "search/layer_level/analytic_step.h"
#include "search/layer_level/layer_placement.h"
#include "search/op_level/driver.h"
#include "search/op_level/pipeline.h"
#include "sim/step_estimate.h"

namespace autopar {
namespace {

struct Setup {
  ir::Graph graph;
  cluster::Cluster cluster;
  std::vector<int> ranks;
};

/// LLaMA2-70B with `layers` layers on `devices` H100s, micro-batch 1 per data-parallel replica;
/// annotated Megatron-style when `tensorParallel` > 0.
Setup llama70b(int64_t layers, int devices, int64_t tensorParallel) {
  auto config = frontend::transformerPreset("llama2-70b");
  config->layers = layers;
  const int64_t dataParallel = tensorParallel > 0 ? devices / tensorParallel : devices;
  if (tensorParallel > 0) {
    config->parallel = ir::ParallelConfig{.tp = tensorParallel, .dp = dataParallel};
  }
  config->microBatch = dataParallel;
  auto graph = frontend::buildTransformer(*config);
  auto cluster = cluster::clusterPreset("dgx-h100", std::max(devices / 8, 1));
  auto taken = cluster::takeDevices(*cluster, devices);
  std::vector<int> ranks(static_cast<size_t>(devices));
  std::iota(ranks.begin(), ranks.end(), 0);
  return Setup{std::move(*graph), std::move(*taken), std::move(ranks)};
}

void runSearch(benchmark::State& state, search::SearchMode mode, int64_t tensorParallel) {
  const Setup setup = llama70b(state.range(0), static_cast<int>(state.range(1)), tensorParallel);
  search::SearchRequest request;
  request.mode = mode;
  for (auto _ : state) {
    auto outcome = search::searchStrategies(setup.graph, setup.ranks, setup.cluster, request);
    if (!outcome) state.SkipWithError(outcome.error().message.c_str());
    benchmark::DoNotOptimize(outcome);
  }
  state.counters["ops"] = static_cast<double>(setup.graph.ops().size());
}

void BM_SemiAutoShardAndCost(benchmark::State& state) {
  const Setup setup = llama70b(state.range(0), static_cast<int>(state.range(1)), 8);
  for (auto _ : state) {
    auto outcome = search::searchStrategies(setup.graph, setup.ranks, setup.cluster, {});
    if (!outcome) {
      state.SkipWithError(outcome.error().message.c_str());
      break;
    }
    auto report = cost::evaluateGraph(setup.graph, outcome->sharding.ops, setup.cluster);
    benchmark::DoNotOptimize(report);
  }
  state.counters["ops"] = static_cast<double>(setup.graph.ops().size());
}

void BM_ShardingPropagation(benchmark::State& state) {
  runSearch(state, search::SearchMode::kShardingPropagation, 8);
}

/// Propagation with no annotation: the anchor search (search/op_level/propagation.h).
void BM_ShardingPropagationUnannotated(benchmark::State& state) {
  runSearch(state, search::SearchMode::kShardingPropagation, 0);
}

void BM_RecursiveProgramming(benchmark::State& state) {
  runSearch(state, search::SearchMode::kRecursiveProgramming, 0);
}

/// LLaMA2-70B, 80 layers, 1024 H100s, TP 8 within each of `stages` pipeline stages, 64
/// micro-batches of 1F1B, with optimizer parallel, full recompute and size buckets: stage
/// assignment, the cost report and the schedule simulation (the strategies are sharded once).
void BM_PipelineFeaturesEstimate(benchmark::State& state) {
  const int stages = static_cast<int>(state.range(0));
  const int devices = 1024;
  Setup setup = llama70b(80, devices / stages, 8);
  auto cluster = cluster::clusterPreset("dgx-h100", devices / 8);
  auto outcome = search::searchStrategies(setup.graph, setup.ranks, setup.cluster, {});
  if (!outcome || !cluster) {
    state.SkipWithError("setup failed");
    return;
  }
  const sim::PipelineShape pipeline{stages, 1, 64, sim::ScheduleKind::k1F1B};
  for (auto _ : state) {
    auto assignment = search::assignStages(setup.graph, stages, 1);
    cost::EvaluateOptions options;
    options.optimizerParallel.enabled = true;
    options.recompute.layers = ir::Recompute::kFull;
    options.fusion.bucketing = cost::Bucketing::kBySize;
    options.stageOfOp = assignment->virtualStageOf;
    options.stages = stages;
    options.physicalStages = stages;
    options.rankStride = devices / stages;
    auto report = cost::evaluateGraph(setup.graph, outcome->sharding.ops, *cluster, options);
    if (!report) {
      state.SkipWithError(report.error().message.c_str());
      break;
    }
    auto estimate = sim::estimateStep(*report, pipeline);
    benchmark::DoNotOptimize(estimate);
  }
}

BENCHMARK(BM_PipelineFeaturesEstimate)
    ->Arg(1)
    ->Arg(8)
    ->Arg(16)
    ->ArgNames({"stages"})
    ->Unit(benchmark::kMillisecond);

/// The hybrid search's analytic pipeline model (search/layer_level/layer_placement.h):
/// LLaMA2-70B-like per-layer figures (80 layers, TP 4), 64 micro-batches. `evaluate` prices one
/// placement of the layers on `stages` stages (one configuration); `place` runs the exact placement
/// program.
search::PlacementProblem llamaLikePlacement(int64_t stages) {
  search::PlacementProblem problem;
  problem.stacks = {
      {80, {0.0125, 0.025, 0.0125, int64_t{700} << 20, int64_t{450} << 20, int64_t{30} << 20}}};
  problem.stages = stages;
  problem.microBatches = 64;
  problem.memoryLimitBytes = int64_t{80} << 30;
  problem.first = {0.01, int64_t{500} << 20, int64_t{60} << 20};
  problem.last = {0.03, int64_t{500} << 20, int64_t{200} << 20};
  problem.stacks.front().layer.weightGradientSeconds = 0.0125;
  problem.first.weightGradientSeconds = 0.0025;
  problem.last.weightGradientSeconds = 0.005;
  return problem;
}

void BM_PlacementModelEvaluate(benchmark::State& state) {
  const int64_t stages = state.range(0);
  const search::PlacementProblem problem = llamaLikePlacement(stages);
  const search::StackCounts layers{std::vector<int64_t>(static_cast<size_t>(stages), 80 / stages)};
  const search::StackCounts recomputed{std::vector<int64_t>(static_cast<size_t>(stages), 0)};
  for (auto _ : state) {
    benchmark::DoNotOptimize(search::evaluatePlacement(problem, layers, recomputed));
  }
  state.SetItemsProcessed(state.iterations());
}

void BM_PlaceLayersExact(benchmark::State& state) {
  const search::PlacementProblem problem = llamaLikePlacement(state.range(0));
  for (auto _ : state) benchmark::DoNotOptimize(search::placeLayers(problem));
}

/// The hybrid search's screen (search/layer_level/analytic_step.h), one configuration per
/// iteration: a LLaMA2-70B-like block profile (TP 4) on 1024 A100s, cycling through PP 1-16, VPP
/// 1-2, ZeRO 0-3 and recompute none/full, each with its data-parallel all-reduce priced over its
/// own group.
void BM_ClosedFormEstimate(benchmark::State& state) {
  auto cluster = cluster::clusterPreset("dgx-a100-80g", 128);
  if (!cluster) {
    state.SkipWithError(cluster.error().message.c_str());
    return;
  }
  search::BlockProfile profile;
  search::ProfiledPart layer;
  layer.forwardSeconds = 0.0125;
  layer.backwardSeconds = 0.025;
  layer.weightGradientSeconds = 0.0125;
  layer.recomputeSeconds = 0.0125;
  layer.optimizerSeconds = 0.0004;
  layer.state = {int64_t{110} << 20, int64_t{220} << 20, int64_t{660} << 20};
  layer.activationBytes = int64_t{450} << 20;
  layer.recomputedActivationBytes = int64_t{30} << 20;
  profile.layers = {layer};
  profile.first.forwardSeconds = 0.004;
  profile.first.backwardSeconds = 0.008;
  profile.first.optimizerSeconds = 0.0002;
  profile.first.state = {int64_t{130} << 20, int64_t{260} << 20, int64_t{780} << 20};
  profile.first.activationBytes = int64_t{60} << 20;
  profile.last = profile.first;
  profile.last.activationBytes = int64_t{200} << 20;
  profile.sendSeconds = 0.001;
  profile.bufferBytes = int64_t{300} << 20;
  struct Case {
    search::AnalyticCandidate candidate;
    std::vector<int> ranks;
  };
  std::vector<Case> cases;
  const int64_t tp = 4;
  for (int64_t pp : {1, 2, 4, 8, 16}) {
    for (int64_t vpp : {1, 2}) {
      for (int zero : {0, 1, 2, 3}) {
        for (bool full : {false, true}) {
          if ((vpp > 1 && pp == 1) || (zero >= 2 && pp > 1)) continue;
          const int64_t dp = 1024 / (tp * pp);
          Case c;
          c.candidate.stages = pp;
          c.candidate.virtualStages = vpp;
          c.candidate.microBatches = 1536 / dp;
          c.candidate.dp = dp;
          c.candidate.zero = zero;
          c.candidate.schedule = vpp > 1 ? ir::Schedule::kInterleaved : ir::Schedule::k1F1B;
          c.candidate.layers = search::evenLayers({80}, pp, vpp);
          c.candidate.recomputed =
              full ? c.candidate.layers : search::zerosLike(c.candidate.layers);
          for (int64_t d = 0; d < dp; ++d) c.ranks.push_back(static_cast<int>(d * tp));
          cases.push_back(std::move(c));
        }
      }
    }
  }
  size_t next = 0;
  for (auto _ : state) {
    const Case& c = cases[next];
    next = next + 1 == cases.size() ? 0 : next + 1;
    auto sync = [&](int64_t bytes, search::ReplicaGroup) {
      return cluster::collectiveCost(*cluster, cluster::Collective::kAllReduce, c.ranks, bytes)
          .seconds;
    };
    benchmark::DoNotOptimize(search::estimateAnalytic(profile, c.candidate, sync));
  }
  state.SetItemsProcessed(state.iterations());
}

BENCHMARK(BM_ClosedFormEstimate);

/// The same under zero-bubble H1 (the program also designates the slowest stage) and interleaved
/// with 2 chunks per stage (each stage's option is the least-recompute split over its chunks).
void BM_PlaceLayersExactZeroBubble(benchmark::State& state) {
  search::PlacementProblem problem = llamaLikePlacement(state.range(0));
  problem.schedule = ir::Schedule::kZeroBubbleH1;
  for (auto _ : state) benchmark::DoNotOptimize(search::placeLayers(problem));
}

void BM_PlaceLayersExactInterleaved(benchmark::State& state) {
  search::PlacementProblem problem = llamaLikePlacement(state.range(0));
  problem.schedule = ir::Schedule::kInterleaved;
  problem.virtualStages = 2;
  for (auto _ : state) benchmark::DoNotOptimize(search::placeLayers(problem));
}

BENCHMARK(BM_PlaceLayersExactZeroBubble)
    ->Arg(4)
    ->Arg(8)
    ->Arg(16)
    ->ArgNames({"stages"})
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_PlaceLayersExactInterleaved)
    ->Arg(4)
    ->Arg(8)
    ->Arg(16)
    ->ArgNames({"stages"})
    ->Unit(benchmark::kMillisecond);

/// The same with a Qwen2-VL-like vision tower first: 32 ViT layers at a hundredth of an LLM
/// layer's time, then the 80 LLM layers.
void BM_PlaceLayersExactVision(benchmark::State& state) {
  search::PlacementProblem problem = llamaLikePlacement(state.range(0));
  problem.stacks.insert(
      problem.stacks.begin(),
      {32, {0.000125, 0.00025, 0.000125, int64_t{20} << 20, int64_t{10} << 20, int64_t{1} << 20}});
  for (auto _ : state) benchmark::DoNotOptimize(search::placeLayers(problem));
}

BENCHMARK(BM_PlaceLayersExactVision)
    ->Arg(4)
    ->Arg(8)
    ->Arg(16)
    ->ArgNames({"stages"})
    ->Unit(benchmark::kMillisecond);

/// The exact placement's growth in layers (issue 20: linear): the LLaMA-like problem with its 80
/// layers' time and memory spread over `layers` layers, on 16 stages, 64 micro-batches, under
/// each schedule (schedule 0: 1F1B, 1: zero-bubble H1, 2: interleaved, VPP 2).
void BM_PlaceLayersExactLayers(benchmark::State& state) {
  search::PlacementProblem problem = llamaLikePlacement(16);
  const int64_t layers = state.range(0);
  search::LayerCost& layer = problem.stacks.front().layer;
  const double scale = 80.0 / static_cast<double>(layers);
  for (double* seconds : {&layer.forwardSeconds, &layer.backwardSeconds, &layer.recomputeSeconds,
                          &layer.weightGradientSeconds}) {
    *seconds *= scale;
  }
  for (int64_t* bytes :
       {&layer.staticBytes, &layer.activationBytes, &layer.recomputedActivationBytes}) {
    *bytes = static_cast<int64_t>(static_cast<double>(*bytes) * scale);
  }
  problem.stacks.front().layers = layers;
  problem.schedule = std::array{ir::Schedule::k1F1B, ir::Schedule::kZeroBubbleH1,
                                ir::Schedule::kInterleaved}[static_cast<size_t>(state.range(1))];
  problem.virtualStages = problem.schedule == ir::Schedule::kInterleaved ? 2 : 1;
  for (auto _ : state) {
    auto placed = search::placeLayers(problem);
    if (!placed) state.SkipWithError(placed.error().message.c_str());
    benchmark::DoNotOptimize(placed);
  }
}

BENCHMARK(BM_PlaceLayersExactLayers)
    ->ArgsProduct({{100, 1000, 10000}, {0, 1, 2}})
    ->ArgNames({"layers", "schedule"})
    ->Unit(benchmark::kMillisecond);

BENCHMARK(BM_PlacementModelEvaluate)->Arg(4)->Arg(8)->Arg(16)->ArgNames({"stages"});
BENCHMARK(BM_PlaceLayersExact)
    ->Arg(4)
    ->Arg(8)
    ->Arg(16)
    ->ArgNames({"stages"})
    ->Unit(benchmark::kMillisecond);

void layersAndDevices(benchmark::internal::Benchmark* bench) {
  for (int64_t layers : {20, 40, 80}) bench->Args({layers, 1024});
  for (int64_t devices : {8, 64, 512, 4096, 8192}) bench->Args({80, devices});
  bench->ArgNames({"layers", "devices"})->Unit(benchmark::kMillisecond);
}

BENCHMARK(BM_SemiAutoShardAndCost)->Apply(layersAndDevices);
BENCHMARK(BM_ShardingPropagation)->Apply(layersAndDevices);
BENCHMARK(BM_RecursiveProgramming)->Apply(layersAndDevices);
BENCHMARK(BM_ShardingPropagationUnannotated)
    ->ArgNames({"layers", "devices"})
    ->Args({20, 8})
    ->Args({80, 8})
    ->Args({80, 64})
    ->Args({80, 512})
    ->Unit(benchmark::kMillisecond);

/// The planner's public API end to end (what `autopar estimate` and `autopar search` run, less
/// process start-up): one Megatron-style configuration of LLaMA2-70B on 64 A100s built, sharded,
/// costed and simulated; and the whole configuration search over it.
void BM_PlannerEstimateConfig(benchmark::State& state) {
  planner::MegatronConfig config;
  config.model = "llama2-70b";
  config.nodes = 8;
  config.tp = 8;
  config.pp = 4;
  config.dp = 2;
  config.gbs = 128;
  config.sequenceParallel = true;
  config.zero = 1;
  for (auto _ : state) {
    auto estimate = planner::estimateConfig(config);
    if (!estimate) {
      state.SkipWithError(estimate.error().message.c_str());
      break;
    }
    benchmark::DoNotOptimize(estimate->stepSeconds);
  }
}
BENCHMARK(BM_PlannerEstimateConfig)->Unit(benchmark::kMillisecond);

void BM_PlannerSearchConfigurations(benchmark::State& state) {
  planner::SearchRequest request;
  request.base.model = "llama2-70b";
  request.base.nodes = 8;
  request.base.gbs = 128;
  for (auto _ : state) {
    auto found = planner::searchConfigurations(request);
    if (!found || !found->best) {
      state.SkipWithError("the search found nothing");
      break;
    }
    benchmark::DoNotOptimize(found->bestSeconds);
  }
}
BENCHMARK(BM_PlannerSearchConfigurations)->Unit(benchmark::kMillisecond)->Iterations(3);

}  // namespace
}  // namespace autopar

BENCHMARK_MAIN();
