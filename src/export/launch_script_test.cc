#include "export/launch_script.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>

#include "frontend/model_config.h"
#include "frontend/model_presets.h"

namespace autopar::exporters {
namespace {

using frontend::TransformerConfig;

/// The script's `name=(...)` array as flag -> value ("" for a switch).
std::map<std::string, std::string> arrayArguments(const std::string& script,
                                                  const std::string& name) {
  std::map<std::string, std::string> arguments;
  const std::string opening = name + "=(";
  const size_t begin = script.find(opening);
  if (begin == std::string::npos) return arguments;
  const size_t end = script.find(")\n", begin);
  std::istringstream words(script.substr(begin + opening.size(), end - begin - opening.size()));
  std::string word;
  std::string flag;
  while (words >> word) {
    if (word.rfind("--", 0) == 0) {
      flag = word;
      arguments[flag] = "";
    } else if (!flag.empty()) {
      arguments[flag] = word;
    }
  }
  return arguments;
}

std::optional<std::string> valueOf(const std::map<std::string, std::string>& arguments,
                                   const std::string& flag) {
  auto found = arguments.find(flag);
  if (found == arguments.end()) return std::nullopt;
  return found->second;
}

plan::InputsRecord inputsOf(const std::string& model) {
  plan::InputsRecord inputs;
  inputs.model = model;
  inputs.cluster = "test";
  return inputs;
}

/// The Megatron-LM script of `model` on one node of 8, TP `tp` and DP 8 / TP.
std::string megatronScriptOf(const TransformerConfig& model, int64_t tp = 1) {
  ir::TrainingSetup setup;
  setup.tp = tp;
  setup.dp = 8 / tp;
  setup.gbs = 8;
  auto script = launchScript(setup, inputsOf(model.name), model, {model.layers}, 1, 8);
  EXPECT_TRUE(script.ok()) << model.name << ": " << script.error().message;
  return script.ok() ? *script : "";
}

/// Each model argument of the script is the model's field, and each field Megatron-LM takes is
/// written.
void expectArgumentsAreTheModels(const TransformerConfig& model) {
  SCOPED_TRACE(model.name);
  const std::string script = megatronScriptOf(model);
  const auto args = arrayArguments(script, "MODEL_ARGS");
  const auto number = [&](const std::string& flag) {
    auto value = valueOf(args, flag);
    EXPECT_TRUE(value.has_value()) << flag << " missing";
    return value ? std::stod(*value) : -1.0;
  };
  EXPECT_EQ(number("--num-layers"), static_cast<double>(model.layers));
  EXPECT_EQ(number("--hidden-size"), static_cast<double>(model.hidden));
  EXPECT_EQ(number("--ffn-hidden-size"), static_cast<double>(model.ffn));
  EXPECT_EQ(number("--num-attention-heads"), static_cast<double>(model.heads));
  EXPECT_EQ(number("--seq-length"), static_cast<double>(model.seq));
  EXPECT_EQ(number("--norm-epsilon"), model.normEpsilon);
  if (model.kvHeads != model.heads) {
    EXPECT_EQ(number("--num-query-groups"), static_cast<double>(model.kvHeads));
  } else {
    EXPECT_FALSE(args.contains("--num-query-groups"));
  }
  EXPECT_EQ(args.contains("--swiglu"), model.mlp == TransformerConfig::Mlp::kSwiGLU);
  EXPECT_EQ(valueOf(args, "--normalization") == "RMSNorm",
            model.norm == TransformerConfig::Norm::kRMSNorm);
  const bool rotary = model.position == TransformerConfig::Position::kRotary;
  EXPECT_EQ(valueOf(args, "--position-embedding-type") == "rope", rotary);
  if (rotary) {
    EXPECT_EQ(number("--rotary-base"), model.ropeBase);
  }
  EXPECT_EQ(args.contains("--untie-embeddings-and-output-weights"), !model.tiedEmbeddings);
  EXPECT_EQ(args.contains("--disable-bias-linear"), !model.linearBias);
  EXPECT_EQ(args.contains("--add-qkv-bias"), model.qkvBias && !model.linearBias);
  if (model.experts > 0) {
    EXPECT_EQ(number("--num-experts"), static_cast<double>(model.experts));
    EXPECT_EQ(number("--moe-router-topk"), static_cast<double>(model.topK));
  }
  // Megatron's NullTokenizer adds one token (end of document) to --vocab-size, and pads the
  // vocabulary to a multiple of --make-vocab-size-divisible-by x TP: at every TP that divides the
  // model's vocabulary, the padded one is the model's, the one autopar priced.
  for (int64_t tp : {1, 2, 4, 8}) {
    if (model.vocab % tp != 0 || model.heads % tp != 0 || model.kvHeads % tp != 0 ||
        model.ffn % tp != 0) {
      continue;
    }
    SCOPED_TRACE(tp);
    const auto data = arrayArguments(tp == 1 ? script : megatronScriptOf(model, tp), "DATA_ARGS");
    EXPECT_EQ(valueOf(data, "--vocab-size"), std::to_string(model.vocab - 1));
    const auto divisor = valueOf(data, "--make-vocab-size-divisible-by");
    ASSERT_TRUE(divisor.has_value());
    const int64_t multiple = std::stoll(*divisor) * tp;
    EXPECT_EQ((model.vocab + multiple - 1) / multiple * multiple, model.vocab);
    EXPECT_LE(std::stoll(*divisor), 128);  // Megatron-LM's default, kept where it pads nothing
  }
}

TEST(LaunchScript, TheVocabularyDivisorIsMegatronsDefaultWhereThatPadsNothing) {
  auto llama = frontend::transformerPreset("llama2-7b");  // vocabulary 32,000 = 2^8 x 125
  ASSERT_TRUE(llama.ok());
  const auto divisorAt = [&](int64_t tp) {
    return valueOf(arrayArguments(megatronScriptOf(*llama, tp), "DATA_ARGS"),
                   "--make-vocab-size-divisible-by");
  };
  EXPECT_EQ(divisorAt(1), "128");
  EXPECT_EQ(divisorAt(2), "128");
  EXPECT_EQ(divisorAt(8), "32");  // 128 x 8 would pad 32,000 to 32,768
}

TEST(LaunchScript, EveryPresetsModelArgumentsAreItsFields) {
  int checked = 0;
  for (const std::string& name : frontend::modelPresetNames()) {
    auto model = frontend::transformerPreset(name);
    if (!model) continue;  // graph presets (ffn, ...) are not transformers
    if (model->vision.layers > 0 || model->position == TransformerConfig::Position::kAlibi) {
      continue;  // refused, below
    }
    expectArgumentsAreTheModels(*model);
    ++checked;
  }
  EXPECT_GE(checked, 10);
}

TEST(LaunchScript, EveryExampleConfigJsonsModelArgumentsAreItsFields) {
  int checked = 0;
  const std::filesystem::path models = std::string(AUTOPAR_SOURCE_DIR) + "/examples/models";
  for (const auto& entry : std::filesystem::directory_iterator(models)) {
    const std::string file = entry.path().filename().string();
    if (file.find("-config.json") == std::string::npos) continue;
    std::ifstream in(entry.path());
    auto model = frontend::modelConfigFromJson(nlohmann::json::parse(in));
    ASSERT_TRUE(model.ok()) << file << ": " << model.error().message;
    if (model->vision.layers > 0) continue;
    model->name = file;
    expectArgumentsAreTheModels(*model);
    ++checked;
  }
  EXPECT_GE(checked, 3);  // LLaMA 2, Llama 3.1, Mixtral
}

TEST(LaunchScript, Llama31CarriesItsRotaryBaseEpsilonAndScaling) {
  std::ifstream in(std::string(AUTOPAR_SOURCE_DIR) + "/examples/models/llama3.1-8b-config.json");
  auto model = frontend::modelConfigFromJson(nlohmann::json::parse(in));
  ASSERT_TRUE(model.ok()) << model.error().message;
  const std::string script = megatronScriptOf(*model);
  EXPECT_NE(script.find("--rotary-base 500000 --use-rope-scaling --rope-scaling-factor 8"),
            std::string::npos)
      << script;
  EXPECT_NE(script.find("--norm-epsilon 1e-05"), std::string::npos);
  EXPECT_EQ(script.find("# Note: the model's rope_scaling"), std::string::npos);
}

TEST(LaunchScript, AScalingMegatronDoesNotBuildIsNotedNotDropped) {
  auto model = frontend::transformerPreset("llama2-7b");
  ASSERT_TRUE(model.ok());
  model->ropeScaling = {.type = "yarn", .factor = 4};
  std::string script = megatronScriptOf(*model);
  EXPECT_EQ(script.find("--use-rope-scaling"), std::string::npos);
  EXPECT_NE(script.find("# Note: the model's rope_scaling 'yarn' (factor 4) has no Megatron-LM"),
            std::string::npos)
      << script;
  // Linear interpolation by a whole factor is Megatron's --rotary-seq-len-interpolation-factor.
  model->ropeScaling = {.type = "linear", .factor = 2};
  script = megatronScriptOf(*model);
  EXPECT_NE(script.find("--rotary-seq-len-interpolation-factor 2"), std::string::npos) << script;
}

TEST(LaunchScript, AFractionalRotaryBaseIsRoundedForMegatronsIntegerFlagWithANote) {
  auto model = frontend::transformerPreset("llama2-7b");
  ASSERT_TRUE(model.ok());
  model->ropeBase = 10000.5;
  const std::string script = megatronScriptOf(*model);
  EXPECT_NE(script.find("--rotary-base 10001 "), std::string::npos) << script;
  EXPECT_NE(script.find("# Note: the rotary base 10000.5 is rounded to 10001"), std::string::npos);
}

TEST(LaunchScript, ModelsMegatronCannotBuildAreRefusedByName) {
  for (const char* name : {"baichuan2-13b", "qwen2-vl-72b"}) {
    auto model = frontend::transformerPreset(name);
    ASSERT_TRUE(model.ok());
    ir::TrainingSetup setup;
    auto script = launchScript(setup, inputsOf(name), *model, {}, 1, 8);
    EXPECT_FALSE(script.ok()) << name;
  }
}

}  // namespace
}  // namespace autopar::exporters
