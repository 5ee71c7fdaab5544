/// \file
/// Writes the ONNX files the repository keeps, deterministically (the same bytes on every run):
///   examples/onnx/mlp.onnx                  seed 002's double-recursive MLP, 784 -> 512 -> 512
///                                           -> 1 with Gemm + Relu, batch 32, as PyTorch exports
///                                           nn.Linear (weight [out, in], transB = 1)
///   tests/data/onnx/unsupported_lstm.onnx   a Relu then an LSTM, an op autopar does not
///                                           translate but whose output shape the graph gives:
///                                           imported as an Opaque op, with a warning
///   tests/data/onnx/unknown_op_no_shape.onnx
///                                           a custom-domain op between two Relus, its output
///                                           without a shape, for the unsupported-op error
/// Each model passes onnx::checker::check_model before it is written.
///
/// Usage (from the repository root, see CMakeLists.txt beside this file):
///   build/make_onnx_models/make_onnx_models .

#include <onnx/checker.h>
#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <string>
#include <vector>

namespace {

/// Opset 13: Gemm, Relu and LSTM as every current exporter writes them.
constexpr int64_t kOpset = 13;

onnx::ModelProto newModel(const std::string& graphName) {
  onnx::ModelProto model;
  model.set_ir_version(onnx::IR_VERSION);
  model.set_producer_name("autopar tools/make_onnx_models");
  auto* opset = model.add_opset_import();
  opset->set_domain("");
  opset->set_version(kOpset);
  model.mutable_graph()->set_name(graphName);
  return model;
}

void addValueInfo(google::protobuf::RepeatedPtrField<onnx::ValueInfoProto>* values,
                  const std::string& name, const std::vector<int64_t>& shape) {
  auto* value = values->Add();
  value->set_name(name);
  auto* tensorType = value->mutable_type()->mutable_tensor_type();
  tensorType->set_elem_type(onnx::TensorProto_DataType_FLOAT);
  for (int64_t dim : shape) tensorType->mutable_shape()->add_dim()->set_dim_value(dim);
}

/// A float initializer filled like PyTorch's nn.Linear init, U(-1/sqrt(fanIn), 1/sqrt(fanIn)),
/// from a fixed mt19937 stream (whose output the C++ standard fixes) and stored as raw_data.
void addInitializer(onnx::GraphProto* graph, const std::string& name,
                    const std::vector<int64_t>& shape, int64_t fanIn, std::mt19937& random) {
  auto* tensor = graph->add_initializer();
  tensor->set_name(name);
  tensor->set_data_type(onnx::TensorProto_DataType_FLOAT);
  int64_t count = 1;
  for (int64_t dim : shape) {
    tensor->add_dims(dim);
    count *= dim;
  }
  const double bound = 1.0 / std::sqrt(static_cast<double>(fanIn));
  std::vector<float> values(count);
  for (float& value : values) {
    const double unit = static_cast<double>(random()) / 4294967296.0;  // [0, 1), 2^32 outcomes
    value = static_cast<float>((2.0 * unit - 1.0) * bound);
  }
  tensor->set_raw_data(values.data(), values.size() * sizeof(float));
}

onnx::NodeProto* addNode(onnx::GraphProto* graph, const std::string& name,
                         const std::string& opType, const std::vector<std::string>& inputs,
                         const std::vector<std::string>& outputs) {
  auto* node = graph->add_node();
  node->set_name(name);
  node->set_op_type(opType);
  for (const auto& input : inputs) node->add_input(input);
  for (const auto& output : outputs) node->add_output(output);
  return node;
}

void addIntAttribute(onnx::NodeProto* node, const std::string& name, int64_t value) {
  auto* attribute = node->add_attribute();
  attribute->set_name(name);
  attribute->set_type(onnx::AttributeProto_AttributeType_INT);
  attribute->set_i(value);
}

/// Seed 002's double-recursive example: layer1 784 -> 512, relu1, layer2 512 -> 512, relu2,
/// layer3 512 -> 1; 665,089 parameters.
onnx::ModelProto seedMlp() {
  constexpr int64_t kBatch = 32;
  const std::vector<int64_t> widths = {784, 512, 512, 1};
  onnx::ModelProto model = newModel("seed_mlp");
  onnx::GraphProto* graph = model.mutable_graph();
  std::mt19937 random(2024);
  addValueInfo(graph->mutable_input(), "x", {kBatch, widths[0]});
  std::string activation = "x";
  for (size_t layer = 1; layer < widths.size(); ++layer) {
    const std::string name = "layer" + std::to_string(layer);
    addInitializer(graph, name + ".weight", {widths[layer], widths[layer - 1]}, widths[layer - 1],
                   random);
    addInitializer(graph, name + ".bias", {widths[layer]}, widths[layer - 1], random);
    const bool last = layer + 1 == widths.size();
    const std::string output = last ? "y" : "h" + std::to_string(layer);
    auto* gemm =
        addNode(graph, name, "Gemm", {activation, name + ".weight", name + ".bias"}, {output});
    addIntAttribute(gemm, "transB", 1);
    activation = output;
    if (last) break;
    const std::string relu = "relu" + std::to_string(layer);
    activation = "a" + std::to_string(layer);
    addNode(graph, relu, "Relu", {output}, {activation});
  }
  addValueInfo(graph->mutable_output(), "y", {kBatch, 1});
  return model;
}

/// x [seq 4, batch 2, input 3] -> Relu 'relu' -> LSTM 'lstm' (hidden 5, one direction) -> y.
onnx::ModelProto unsupportedLstm() {
  constexpr int64_t kHidden = 5;
  onnx::ModelProto model = newModel("unsupported_lstm");
  onnx::GraphProto* graph = model.mutable_graph();
  std::mt19937 random(7);
  addValueInfo(graph->mutable_input(), "x", {4, 2, 3});
  addInitializer(graph, "lstm.W", {1, 4 * kHidden, 3}, 3, random);
  addInitializer(graph, "lstm.R", {1, 4 * kHidden, kHidden}, kHidden, random);
  addNode(graph, "relu", "Relu", {"x"}, {"r"});
  auto* lstm = addNode(graph, "lstm", "LSTM", {"r", "lstm.W", "lstm.R"}, {"y"});
  addIntAttribute(lstm, "hidden_size", kHidden);
  addValueInfo(graph->mutable_output(), "y", {4, 1, 2, kHidden});
  return model;
}

/// x [4, 3] -> Relu 'relu' -> com.example.Mystery 'mystery' -> y -> Relu 'relu2' -> z [4, 3];
/// no value_info gives y a shape, and ONNX has no schema to infer it from.
onnx::ModelProto unknownOpWithoutShape() {
  onnx::ModelProto model = newModel("unknown_op_no_shape");
  auto* custom = model.add_opset_import();
  custom->set_domain("com.example");
  custom->set_version(1);
  onnx::GraphProto* graph = model.mutable_graph();
  addValueInfo(graph->mutable_input(), "x", {4, 3});
  addNode(graph, "relu", "Relu", {"x"}, {"r"});
  addNode(graph, "mystery", "Mystery", {"r"}, {"y"})->set_domain("com.example");
  addNode(graph, "relu2", "Relu", {"y"}, {"z"});
  addValueInfo(graph->mutable_output(), "z", {4, 3});
  return model;
}

bool write(const onnx::ModelProto& model, const std::filesystem::path& path) {
  try {
    onnx::checker::check_model(model);
  } catch (const std::exception& error) {
    std::cerr << path.string() << ": check_model failed: " << error.what() << "\n";
    return false;
  }
  std::filesystem::create_directories(path.parent_path());
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  if (!file || !model.SerializeToOstream(&file)) {
    std::cerr << path.string() << ": cannot write\n";
    return false;
  }
  std::cout << "wrote " << path.string() << " (" << model.ByteSizeLong() << " bytes)\n";
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: make_onnx_models REPOSITORY_ROOT\n";
    return 2;
  }
  const std::filesystem::path root = argv[1];
  const bool ok = write(seedMlp(), root / "examples/onnx/mlp.onnx") &&
                  write(unsupportedLstm(), root / "tests/data/onnx/unsupported_lstm.onnx") &&
                  write(unknownOpWithoutShape(), root / "tests/data/onnx/unknown_op_no_shape.onnx");
  return ok ? 0 : 1;
}
