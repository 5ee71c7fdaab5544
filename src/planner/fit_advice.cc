#include "planner/fit_advice.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "ir/setting.h"
#include "planner/data_parallel_shares.h"
#include "planner/inputs.h"
#include "planner/mem_coeff_auto.h"
#include "planner/run_yaml.h"
#include "util/in_parallel.h"

namespace autopar::planner {

namespace {

/// One setting a change gives, with its value (none for a switch).
struct Given {
  Setting setting;
  std::string value;
  /// "--recompute full", "--optimizer-parallel".
  [[nodiscard]] std::string flagText() const {
    return value.empty() ? ir::flag(setting) : ir::flag(setting, value);
  }
};

/// A change to the planning request, spelt both ways a user gives one: the settings (the
/// command line's flags) and run-yaml keys.
struct Change {
  std::vector<Given> settings;                            ///< {kRecompute, "full"}
  std::vector<std::pair<std::string, std::string>> yaml;  ///< "recompute_config.recompute", "True"

  [[nodiscard]] bool gives(Setting setting) const {
    return std::any_of(settings.begin(), settings.end(),
                       [&](const Given& given) { return given.setting == setting; });
  }
  /// The flags as the plan JSON records them: "--pipeline-stages", "8", "--micro-batches", "16".
  [[nodiscard]] std::vector<std::string> flags() const {
    std::vector<std::string> out;
    for (const Given& given : settings) {
      out.push_back(ir::flag(given.setting));
      if (!given.value.empty()) out.push_back(given.value);
    }
    return out;
  }
};

/// The levers, each a family of variants; two variants of one lever never combine.
enum class Lever { kRecompute, kOptimizerParallel, kPipeline, kTensorParallel, kMemCoeff };

/// One way to pull a lever: the change as the user spells it, and what it does to the request.
struct Variant {
  Lever lever;
  Change change;
  std::function<void(PlanOptions&)> apply;
};

/// A planned request: the changes that made it and what the plan costs.
struct Trial {
  Change change;
  double stepSeconds = 0;
  int64_t samplesPerStep = 0;
  int64_t peakBytes = 0;
  int64_t stateBytes = 0;  ///< parameters, gradients and optimizer states
  bool fits = false;       ///< under the request's memory policy
  [[nodiscard]] double secondsPerSample() const {
    return stepSeconds / static_cast<double>(std::max<int64_t>(samplesPerStep, 1));
  }
};

Change merged(const Change& a, const Change& b) {
  Change out = a;
  // A setting the first change gives is not given again.
  for (const Given& given : b.settings) {
    if (!out.gives(given.setting)) out.settings.push_back(given);
  }
  for (const auto& entry : b.yaml) {
    if (std::find(out.yaml.begin(), out.yaml.end(), entry) == out.yaml.end()) {
      out.yaml.push_back(entry);
    }
  }
  return out;
}

/// The devices of one pipeline stage under `options`.
int64_t stageDevices(const PlanOptions& options, int64_t numDevices) {
  return numDevices / std::max<int64_t>(options.setup.pp, 1);
}

/// Sets a setting's value and its yaml key in `change`, replacing what it had.
void put(Change& change, Setting setting, const std::string& value, const std::string& yamlKey) {
  auto it = std::find_if(change.settings.begin(), change.settings.end(),
                         [&](const Given& given) { return given.setting == setting; });
  if (it != change.settings.end()) {
    it->value = value;
  } else {
    change.settings.push_back({setting, value});
  }
  auto entry = std::find_if(change.yaml.begin(), change.yaml.end(),
                            [&](const auto& kv) { return kv.first == yamlKey; });
  if (entry != change.yaml.end()) {
    entry->second = value;
  } else if (!yamlKey.empty()) {
    change.yaml.emplace_back(yamlKey, value);
  }
}

/// What `change` made: the plan's step, samples, peak and model states, and whether it fits a
/// device of `capacity` bytes under `policy`.
Trial trialOf(const Change& change, const Evaluated& evaluated, int64_t capacity,
              ir::MemoryPolicy policy) {
  const auto memory = evaluated.estimate.peakMemory();
  return Trial{change,
               evaluated.estimate.stepSeconds,
               evaluated.model.graphBatch * evaluated.pipeline.microBatches *
                   evaluated.evaluateOptions.copies,
               evaluated.peakBytes(),
               memory.parameterBytes + memory.gradientBytes + memory.optimizerBytes,
               evaluated.fitsIn(capacity, policy)};
}

/// Full recompute and optimizer parallel as the user turns them on.
Change fullRecomputeChange() {
  return {{{Setting::kRecompute, "full"}}, {{"recompute_config.recompute", "True"}}};
}
Change optimizerParallelChange() {
  return {{{Setting::kOptimizerParallel, ""}}, {{"parallel.enable_parallel_optimizer", "True"}}};
}
Change optimizerParallelCommRecomputeChange() {
  return {{{Setting::kParallelOptimizerCommRecompute, ""}},
          {{"recompute_config.parallel_optimizer_comm_recompute", "True"}}};
}

void addRecompute(const PlanOptions& options, std::vector<Variant>& out) {
  const ir::Recompute recompute = options.setup.recompute;
  if (recompute == ir::Recompute::kNone) {
    out.push_back(
        {Lever::kRecompute,
         {{{Setting::kRecompute, "selective"}}, {{"recompute_config.select_recompute", "True"}}},
         [](PlanOptions& o) { o.setup.recompute = ir::Recompute::kSelective; }});
  }
  if (recompute != ir::Recompute::kFull) {
    out.push_back({Lever::kRecompute, fullRecomputeChange(),
                   [](PlanOptions& o) { o.setup.recompute = ir::Recompute::kFull; }});
  }
}

void addOptimizerParallel(const PlanOptions& options, std::vector<Variant>& out) {
  const TrainingFlags& training = options.training;
  // Each variant turns optimizer parallel on as well, where the plan does not have it.
  auto withOptimizerParallel = [&](Change change) {
    return training.optimizerParallel ? change : merged(optimizerParallelChange(), change);
  };
  if (!training.optimizerParallel) {
    out.push_back({Lever::kOptimizerParallel, optimizerParallelChange(),
                   [](PlanOptions& o) { o.training.optimizerParallel = true; }});
  }
  // Accumulated gradients sharded too: worth it only when a step accumulates micro-batches.
  if (!training.gradientAccumulationShard && training.microBatches > 1) {
    out.push_back(
        {Lever::kOptimizerParallel,
         withOptimizerParallel(
             {{{Setting::kGradientAccumulationShard, ""}},
              {{"parallel.parallel_optimizer_config.gradient_accumulation_shard", "True"}}}),
         [](PlanOptions& o) {
           o.training.optimizerParallel = true;
           o.training.gradientAccumulationShard = true;
         }});
  }
  // Recomputed blocks keep each gathered parameter from forward to backward unless the gather is
  // recomputed too (MindSpore's parallel_optimizer_comm_recompute, off by default): without it,
  // optimizer parallel under full recompute still holds the stage's gathered weights. Alone it
  // changes nothing; the trials pair it with the recompute lever.
  if (!training.parallelOptimizerCommRecompute) {
    out.push_back({Lever::kOptimizerParallel,
                   withOptimizerParallel(optimizerParallelCommRecomputeChange()),
                   [](PlanOptions& o) {
                     o.training.optimizerParallel = true;
                     o.training.parallelOptimizerCommRecompute = true;
                   }});
  }
}

/// More stages, each with at least two micro-batches in flight per stage (1F1B's peak holds one
/// per stage; more only shrink the bubble).
void addPipeline(const PlanOptions& options, int64_t numDevices, std::vector<Variant>& out) {
  const auto current = static_cast<int>(std::max<int64_t>(options.setup.pp, 1));
  for (int stages = current * 2; stages <= std::min<int64_t>(numDevices, 64); stages *= 2) {
    if (numDevices % stages != 0) break;
    const int micro = std::max(options.training.microBatches, 2 * stages);
    out.push_back({Lever::kPipeline,
                   {{{Setting::kPipelineStages, std::to_string(stages)},
                     {Setting::kMicroBatches, std::to_string(micro)}},
                    {{"parallel_config.pipeline_stage", std::to_string(stages)},
                     {"parallel_config.micro_batch_num", std::to_string(micro)}}},
                   [stages, micro](PlanOptions& o) {
                     o.setup.pp = stages;
                     o.training.microBatches = micro;
                   }});
  }
}

/// A Megatron-style annotation's tensor-parallel degree doubled, up to three times and within one
/// node, as Megatron-LM keeps it (its collectives on every layer need the node's links; data
/// parallelism then fills the rest of the stage, Trials::run).
void addTensorParallel(const PlanOptions& options, const cluster::Cluster& cluster,
                       std::vector<Variant>& out) {
  if (!options.modelOptions.parallel) return;
  const ir::ParallelConfig& parallel = *options.modelOptions.parallel;
  const int64_t devices = stageDevices(options, cluster.numDevices);
  const int64_t most = std::min<int64_t>(parallel.tp * 8, cluster.devicesPerNode);
  for (int64_t tp = parallel.tp * 2; tp <= most; tp *= 2) {
    if (devices % (tp * parallel.cp) != 0) break;
    out.push_back({Lever::kTensorParallel,
                   {{{Setting::kTp, std::to_string(tp)}},
                    {{"parallel_config.model_parallel", std::to_string(tp)}}},
                   [tp](PlanOptions& o) { o.modelOptions.parallel->tp = tp; }});
  }
}

/// Seed 000's lever: a higher mem_coeff trades data parallelism for memory (by factors of 4).
void addMemCoeff(const PlanOptions& options, std::vector<Variant>& out) {
  if (options.search != search::SearchMode::kRecursiveProgramming) return;
  for (double memCoeff = options.memCoeff * 4; memCoeff <= options.memCoeff * 1024; memCoeff *= 4) {
    const std::string value = fmt::format("{:g}", memCoeff);
    out.push_back({Lever::kMemCoeff,
                   {{{Setting::kMemCoeff, value}}, {{"parallel_config.mem_coeff", value}}},
                   [memCoeff](PlanOptions& o) { o.memCoeff = memCoeff; }});
  }
}

/// The fastest double-recursive plan that fits among seed 000's mem_coeff ladder, with
/// MindFormers' memory levers (optimizer parallel, then full recompute, then the gathers
/// recomputed) where the ladder alone does not fit (`--mem-coeff fastest` on the ladder alone).
/// It can take three levers at once, which the trials' pairs never combine: LLaMA2-70B over 1,024
/// A100s fits at mem_coeff 1.6 with optimizer parallel and full recompute, faster a sample than
/// the best pair (`autopar plan --model llama2-70b --nodes 128 --search
/// recursive_programming` prints both).
std::optional<Trial> memCoeffLadderFix(const PlanOptions& options, const cluster::Cluster& cluster,
                                       const FitProgress& progress) {
  if (options.search != search::SearchMode::kRecursiveProgramming ||
      options.memCoeffRule != frontend::MemCoeffRule::kGiven) {
    return std::nullopt;
  }
  PlanOptions fastest = options;
  fastest.memCoeffRule = frontend::MemCoeffRule::kFastest;
  auto choice = chooseMemCoeff(fastest, cluster, progress, FastestClimb::kLadder);
  if (!choice || !choice->fits) return std::nullopt;
  const std::string value = fmt::format("{:g}", choice->options.memCoeff);
  Change change{{{Setting::kMemCoeff, value}}, {{"parallel_config.mem_coeff", value}}};
  // The ladder's levers (planner/mem_coeff_auto.h): optimizer parallel, full recompute, and the
  // gathers recomputed.
  if (choice->options.training.optimizerParallel && !options.training.optimizerParallel) {
    change = merged(change, optimizerParallelChange());
  }
  if (choice->options.setup.recompute != options.setup.recompute) {
    change = merged(change, fullRecomputeChange());
  }
  if (choice->options.training.parallelOptimizerCommRecompute &&
      !options.training.parallelOptimizerCommRecompute) {
    change = merged(change, optimizerParallelCommRecomputeChange());
  }
  return trialOf(change, choice->evaluated, cluster.device.memoryBytes, options.setup.memoryPolicy);
}

/// A change's settings, each with its value as one string ("--pipeline-stages 8").
std::set<std::string> partsOf(const Change& change) {
  std::set<std::string> parts;
  for (const Given& given : change.settings) parts.insert(given.flagText());
  return parts;
}

/// Plans `options` on `base` (or on its preset with `options.nodes` nodes, when they differ).
std::optional<Trial> plan(const PlanOptions& options, const Change& change, int baseNodes,
                          const cluster::Cluster& base) {
  Expected<cluster::Cluster> cluster = base;
  if (options.nodes != baseNodes) cluster = loadCluster(options.cluster, options.nodes, 0);
  if (!cluster) return std::nullopt;
  capDeviceMemory(options, *cluster);
  // Uneven data-parallel shares must still hold under the change (a share for each replica,
  // whole samples in every micro-batch), and the step trains the shares' samples.
  PlanOptions planned = options;
  auto shared = applyShares(planned, *cluster);
  if (!shared) return std::nullopt;
  auto evaluated = evaluate(planned, *cluster, planned.modelOptions);
  if (!evaluated) return std::nullopt;
  Trial trial =
      trialOf(change, *evaluated, cluster->device.memoryBytes, options.setup.memoryPolicy);
  if (*shared) trial.samplesPerStep = (*shared)->samples;
  return trial;
}

/// The trials of one stage of the advice, planned in order until the budget runs out.
class Trials {
 public:
  Trials(const PlanOptions& options, const cluster::Cluster& cluster, const FitProgress& progress)
      : options_(options), cluster_(cluster), progress_(progress) {}

  /// Plans the variants together; nothing when the budget is spent or the plan fails.
  std::optional<Trial> run(const std::vector<const Variant*>& variants, int nodes) {
    return runAll({variants}, nodes).front();
  }

  /// Plans each set of variants, side by side (util/in_parallel.h), and keeps them in order as if
  /// planned one by one; nothing for a set past the budget or whose plan fails.
  std::vector<std::optional<Trial>> runAll(const std::vector<std::vector<const Variant*>>& sets,
                                           int nodes) {
    std::vector<Request> requests;
    for (const auto& variants : sets) {
      if (planned_ + static_cast<int>(requests.size()) >= kMaxFitTrials) break;
      requests.push_back(request(variants, nodes));
    }
    std::vector<std::optional<Trial>> trials;
    for (size_t first = 0; first < requests.size(); first += util::parallelWidth()) {
      const size_t count = std::min(util::parallelWidth(), requests.size() - first);
      auto planned = util::inParallel(count, [&](size_t i) {
        const Request& r = requests[first + i];
        return plan(r.options, r.change, options_.nodes, cluster_);
      });
      for (auto& trial : planned) trials.push_back(record(std::move(trial)));
    }
    trials.resize(sets.size());
    return trials;
  }
  [[nodiscard]] size_t fitting() const { return fitting_.size(); }
  [[nodiscard]] int planned() const { return planned_; }

  /// A fix planned outside the trials (`--mem-coeff fastest`'s choice), unless one with the same
  /// flags is already kept.
  void addFix(Trial fix) {
    const auto parts = partsOf(fix.change);
    const bool known = std::any_of(fitting_.begin(), fitting_.end(), [&](const Trial& kept) {
      return partsOf(kept.change) == parts;
    });
    if (!known) fitting_.push_back(std::move(fix));
  }

  /// Whether `change` adds to a change that already fits: it is never the cheaper one.
  [[nodiscard]] bool extendsAFix(const Change& change) const {
    const auto parts = partsOf(change);
    return std::any_of(fitting_.begin(), fitting_.end(), [&](const Trial& fix) {
      const auto fixParts = partsOf(fix.change);
      return std::includes(parts.begin(), parts.end(), fixParts.begin(), fixParts.end());
    });
  }

  FitAdvice advice() {
    FitAdvice advice;
    std::stable_sort(fitting_.begin(), fitting_.end(), [](const Trial& a, const Trial& b) {
      return a.secondsPerSample() < b.secondsPerSample();
    });
    for (const Trial& trial : fitting_) {
      if (advice.fixes.size() == kMaxFixes) break;
      advice.fixes.push_back({trial.change.flags(), trial.change.yaml, trial.stepSeconds,
                              trial.samplesPerStep, trial.peakBytes});
    }
    if (!advice.fixes.empty()) return advice;
    advice.unmet = unmet();
    return advice;
  }

 private:
  std::string unmet() const {
    const int64_t capacity = cluster_.device.memoryBytes;
    if (failing_.empty()) {
      return fmt::format(
          "no change autopar tried could be planned; the plan needs more than the "
          "{} of one {}",
          formatBytes(capacity), cluster_.device.name);
    }
    const Trial& lowest =
        *std::min_element(failing_.begin(), failing_.end(),
                          [](const Trial& a, const Trial& b) { return a.peakBytes < b.peakBytes; });
    const std::string what =
        lowest.stateBytes > capacity
            ? fmt::format(
                  "the model states alone (parameters, gradients, "
                  "optimizer states) take {}",
                  formatBytes(lowest.stateBytes))
            : fmt::format("states {} and activations {}", formatBytes(lowest.stateBytes),
                          formatBytes(lowest.peakBytes - lowest.stateBytes));
    return fmt::format(
        "device memory: nothing autopar tried fits; the lowest peak, {} with {}, exceeds the {} of "
        "one {} by {} ({})",
        formatBytes(lowest.peakBytes), fmt::join(lowest.change.flags(), " "), formatBytes(capacity),
        cluster_.device.name, formatBytes(lowest.peakBytes - capacity), what);
  }

  /// A request to plan: the options the variants make and the change as the user spells it.
  struct Request {
    PlanOptions options;
    Change change;
  };

  Request request(const std::vector<const Variant*>& variants, int nodes) const {
    Request out{options_, {}};
    PlanOptions& options = out.options;
    Change& change = out.change;
    for (const Variant* variant : variants) {
      variant->apply(options);
      change = merged(change, variant->change);
    }
    int64_t devices = cluster_.numDevices;
    if (nodes != options_.nodes) {
      options.nodes = nodes;
      devices = devices / options_.nodes * nodes;
      put(change, Setting::kNodes, std::to_string(nodes), "");
    }
    // A Megatron-style annotation's data parallelism fills the stage the changes leave: by
    // itself when it came from the devices (--tp without --dp), else by a --dp of its own.
    if (options.modelOptions.parallel && !options.modelOptions.dataParallelFromDevices) {
      ir::ParallelConfig& parallel = *options.modelOptions.parallel;
      const int64_t dp =
          std::max<int64_t>(stageDevices(options, devices) / (parallel.tp * parallel.cp), 1);
      if (dp != parallel.dp) {
        // --dp goes with --tp (a run yaml's model_parallel is not enough on the command line).
        if (!change.gives(Setting::kTp)) put(change, Setting::kTp, std::to_string(parallel.tp), "");
        put(change, Setting::kDp, std::to_string(dp), "parallel_config.data_parallel");
      }
      parallel.dp = dp;
    }
    return out;
  }

  /// Counts a planned trial and keeps it as fitting (unless it extends a fix) or failing.
  std::optional<Trial> record(std::optional<Trial> trial) {
    ++planned_;
    if (progress_) progress_(planned_);
    if (!trial) return trial;
    if (!trial->fits) {
      failing_.push_back(*trial);
    } else if (!extendsAFix(trial->change)) {
      fitting_.push_back(*trial);
    }
    return trial;
  }

  const PlanOptions& options_;
  const cluster::Cluster& cluster_;
  const FitProgress& progress_;
  int planned_ = 0;
  std::vector<Trial> fitting_;
  std::vector<Trial> failing_;
};

/// Per lever, the variants in the order given.
std::vector<std::vector<const Variant*>> byLever(const std::vector<Variant>& variants) {
  std::vector<std::vector<const Variant*>> levers;
  for (const Variant& variant : variants) {
    if (levers.empty() || levers.back().front()->lever != variant.lever) levers.emplace_back();
    levers.back().push_back(&variant);
  }
  return levers;
}

}  // namespace

FitAdvice adviseFit(const PlanOptions& options, const cluster::Cluster& cluster,
                    const FitProgress& progress) {
  std::vector<Variant> variants;
  addRecompute(options, variants);
  addOptimizerParallel(options, variants);
  addPipeline(options, cluster.numDevices, variants);
  addTensorParallel(options, cluster, variants);
  addMemCoeff(options, variants);
  const auto levers = byLever(variants);
  Trials trials(options, cluster, progress);

  // Each lever alone; per lever, the variant with the lowest peak is its strongest.
  std::vector<std::vector<const Variant*>> alone;
  for (const auto& lever : levers) {
    for (const Variant* variant : lever) alone.push_back({variant});
  }
  const std::vector<std::optional<Trial>> planned = trials.runAll(alone, options.nodes);
  std::vector<const Variant*> strongest(levers.size(), nullptr);
  for (size_t l = 0, i = 0; l < levers.size(); ++l) {
    int64_t lowest = INT64_MAX;
    for (const Variant* variant : levers[l]) {
      const std::optional<Trial>& trial = planned[i++];
      if (trial && trial->peakBytes < lowest) {
        lowest = trial->peakBytes;
        strongest[l] = variant;
      }
    }
  }
  // Two levers together: every variant of one with the strongest of another.
  for (size_t a = 0; a < levers.size() && trials.fitting() < kMaxFixes; ++a) {
    std::vector<std::vector<const Variant*>> pairs;
    for (size_t b = 0; b < levers.size(); ++b) {
      if (b == a || strongest[b] == nullptr) continue;
      for (const Variant* variant : levers[a]) {
        if (a < b || variant != strongest[a]) pairs.push_back({variant, strongest[b]});
      }
    }
    trials.runAll(pairs, options.nodes);
  }
  // Every lever at its strongest, then on more nodes (last: they cost hardware).
  std::vector<const Variant*> all;
  for (const Variant* variant : strongest) {
    if (variant != nullptr) all.push_back(variant);
  }
  if (trials.fitting() == 0 && all.size() > 2) trials.run(all, options.nodes);
  const FitProgress counted = [&](int planned) {
    if (progress) progress(trials.planned() + planned);
  };
  if (auto fix = memCoeffLadderFix(options, cluster, counted)) trials.addFix(std::move(*fix));
  if (options.devices == 0) {
    for (int nodes = options.nodes * 2; nodes <= options.nodes * 16 && trials.fitting() == 0;
         nodes *= 2) {
      trials.runAll({{}, all}, nodes);
    }
  }
  return trials.advice();
}

std::string fixYaml(const plan::FixRecord& fix) {
  std::string yaml;
  for (const auto& [key, value] : fix.yaml) {
    yaml += fmt::format("{}{}: {}", yaml.empty() ? "" : ", ", key, value);
  }
  return yaml;
}

std::string formatFix(const plan::FixRecord& fix) {
  const std::string yaml = fixYaml(fix);
  return fmt::format("{}: step {} for {} samples, peak {}{}", fmt::join(fix.flags, " "),
                     formatSeconds(fix.stepSeconds), fix.samplesPerStep,
                     formatBytes(fix.peakMemoryBytes),
                     yaml.empty() ? "" : fmt::format(" (yaml: {})", yaml));
}

}  // namespace autopar::planner
