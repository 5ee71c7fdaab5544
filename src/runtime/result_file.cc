// A rank's result as a LibTorch archive (runtime/result_file.h).

#include "runtime/result_file.h"

#include <fmt/format.h>
#include <torch/torch.h>

namespace autopar::runtime {

Status writeResult(const RankResult& result, const std::string& path) {
  try {
    torch::serialize::OutputArchive archive;
    // Per step: loss, seconds, forward, backward, activation bytes, then per part its forward
    // seconds and kept bytes.
    std::vector<double> steps;
    for (const auto& step : result.steps) {
      steps.insert(steps.end(), {step.loss, step.seconds, step.forwardSeconds, step.backwardSeconds,
                                 static_cast<double>(step.activationBytes)});
      for (const PartCost& part : step.parts) {
        steps.insert(steps.end(), {part.forwardSeconds, static_cast<double>(part.keptBytes)});
      }
    }
    archive.write("steps", torch::tensor(steps, torch::kFloat64));
    archive.write("count", torch::tensor(static_cast<int64_t>(result.parameters.size())));
    for (size_t i = 0; i < result.parameters.size(); ++i) {
      const ParameterBlock& block = result.parameters[i];
      torch::serialize::OutputArchive entry;
      std::vector<int64_t> ranges;
      for (const auto& [lo, hi] : block.ranges) ranges.insert(ranges.end(), {lo, hi});
      std::vector<uint8_t> name(block.name.begin(), block.name.end());
      entry.write("name", torch::tensor(std::vector<int64_t>(name.begin(), name.end())));
      entry.write("full_shape", torch::tensor(block.fullShape));
      entry.write("ranges", torch::tensor(ranges));
      entry.write("values", torch::tensor(block.values));
      archive.write(fmt::format("parameter{}", i), entry);
    }
    archive.save_to(path);
    return {};
  } catch (const std::exception& error) {
    const std::string message = error.what();
    return Error{fmt::format("{}: cannot write the rank's result: {}", path,
                             message.substr(0, message.find('\n')))};
  }
}

Expected<RankResult> readResult(const std::string& path) {
  try {
    torch::serialize::InputArchive archive;
    archive.load_from(path);
    auto vectorOf = [](const at::Tensor& t) {
      auto c = t.contiguous();
      return std::vector<int64_t>(c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel());
    };
    at::Tensor steps, count;
    archive.read("steps", steps);
    archive.read("count", count);
    RankResult result;
    constexpr int64_t kFields = 5 + 2 * kParts;
    const auto flat = steps.contiguous();
    const double* v = flat.data_ptr<double>();
    for (int64_t i = 0; i + kFields <= flat.numel(); i += kFields) {
      StepReport step{static_cast<int>(i / kFields), v[i], v[i + 1], v[i + 2], v[i + 3],
                      static_cast<int64_t>(v[i + 4])};
      for (int part = 0; part < kParts; ++part) {
        step.parts[static_cast<size_t>(part)] = {v[i + 5 + 2 * part],
                                                 static_cast<int64_t>(v[i + 6 + 2 * part])};
      }
      result.steps.push_back(step);
    }
    for (int64_t i = 0; i < count.item<int64_t>(); ++i) {
      torch::serialize::InputArchive entry;
      archive.read(fmt::format("parameter{}", i), entry);
      at::Tensor name, fullShape, ranges, values;
      entry.read("name", name);
      entry.read("full_shape", fullShape);
      entry.read("ranges", ranges);
      entry.read("values", values);
      ParameterBlock block;
      for (int64_t c : vectorOf(name)) block.name.push_back(static_cast<char>(c));
      block.fullShape = vectorOf(fullShape);
      const auto bounds = vectorOf(ranges);
      for (size_t k = 0; k + 1 < bounds.size(); k += 2)
        block.ranges.emplace_back(bounds[k], bounds[k + 1]);
      auto data = values.contiguous();
      block.values.assign(data.data_ptr<float>(), data.data_ptr<float>() + data.numel());
      result.parameters.push_back(std::move(block));
    }
    return result;
  } catch (const std::exception& error) {
    const std::string message = error.what();
    return Error{fmt::format("{}: cannot read the rank's result: {}", path,
                             message.substr(0, message.find('\n')))};
  }
}

}  // namespace autopar::runtime
