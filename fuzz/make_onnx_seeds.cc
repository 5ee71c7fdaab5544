/// \file
/// Writes the ONNX fuzzer's seed models into the directory given (scripts/fuzz.sh runs it in
/// build/fuzz): a few hundred bytes each, so that mutations stay near valid models, and together
/// they use every op the importer maps, in the opsets whose inputs and attributes differ.
/// The repository's own ONNX files are seeds too: tests/data/onnx/ (examples/onnx/mlp.onnx
/// carries 2.6 MB of weights, past any useful input size).

#include <onnx/onnx_pb.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "frontend/onnx_test_util.h"

namespace {

using Model = autopar::frontend::OnnxTestModel;

/// Embedding, LayerNormalization, q/k/v MatMuls, Reshape, Transpose, scores, Softmax, Gelu.
Model attention() {
  Model model;
  model.input("ids", {2, 8}, onnx::TensorProto_DataType_INT64);
  model.floatInitializer("embed.weight", {10, 8});
  model.floatInitializer("ln.scale", {8});
  model.floatInitializer("ln.bias", {8});
  model.floatInitializer("wq", {8, 8});
  model.floatInitializer("wk", {8, 8});
  model.intInitializer("heads_shape", {0, 0, 2, 4});
  model.intInitializer("merge_shape", {2, 8, -1});
  model.scalarInitializer("scale", 2.0f);
  model.node("Gather", "embed", {"embed.weight", "ids"}, {"x"});
  Model::floatAttribute(
      model.node("LayerNormalization", "ln", {"x", "ln.scale", "ln.bias"}, {"xn"}), "epsilon",
      1e-6f);
  model.node("MatMul", "q", {"xn", "wq"}, {"q"});
  model.node("MatMul", "k", {"xn", "wk"}, {"k"});
  model.node("Reshape", "q_split", {"q", "heads_shape"}, {"q4"});
  model.node("Reshape", "k_split", {"k", "heads_shape"}, {"k4"});
  Model::intsAttribute(model.node("Transpose", "q_t", {"q4"}, {"qt"}), "perm", {0, 2, 1, 3});
  Model::intsAttribute(model.node("Transpose", "k_t", {"k4"}, {"kt"}), "perm", {0, 2, 3, 1});
  model.node("MatMul", "scores", {"qt", "kt"}, {"s"});
  model.node("Div", "scale", {"s", "scale"}, {"ss"});
  Model::intAttribute(model.node("Softmax", "softmax", {"ss"}, {"p"}), "axis", -1);
  model.node("MatMul", "context", {"p", "qt"}, {"c"});
  Model::intsAttribute(model.node("Transpose", "merge_t", {"c"}, {"ct"}), "perm", {0, 2, 1, 3});
  model.node("Reshape", "merge", {"ct", "merge_shape"}, {"o"});
  model.node("Add", "residual", {"x", "o"}, {"r"});
  Model::stringAttribute(model.node("Gelu", "gelu", {"r"}, {"g"}), "approximate", "tanh");
  return model;
}

/// Gemm with and without bias and transposes, unary and binary elementwise ops, Dropout with
/// its ratio input, Identity and Cast (opset 13), with a dynamic batch dim.
Model elementwise() {
  Model model(13);
  model.input("x", {-1, 4});
  model.floatInitializer("w", {6, 4});
  model.floatInitializer("b", {6});
  model.scalarInitializer("ratio", 0.1f);
  Model::intAttribute(model.node("Gemm", "fc", {"x", "w", "b"}, {"h"}), "transB", 1);
  std::string current = "h";
  for (const char* opType : {"Relu", "Sigmoid", "Tanh", "Exp", "Neg", "Sqrt"}) {
    const std::string output = std::string("t_") + opType;
    model.node(opType, "", {current}, {output});
    current = output;
  }
  model.node("Sub", "sub", {current, "h"}, {"d"});
  model.node("Mul", "mul", {"d", "h"}, {"m"});
  model.node("Dropout", "drop", {"m", "ratio"}, {"dr", "mask"});
  model.node("Identity", "same", {"dr"}, {"alias"});
  Model::intAttribute(model.node("Cast", "cast", {"alias"}, {"half"}), "to",
                      onnx::TensorProto_DataType_FLOAT16);
  return model;
}

/// Slice, Concat, Flatten, Unsqueeze, Squeeze, Transpose and reductions with axes as inputs
/// (opset 18).
Model shapes() {
  Model model(18);
  model.input("x", {2, 3, 4});
  model.intInitializer("starts", {1, -3});
  model.intInitializer("ends", {100, -1});
  model.intInitializer("axes", {1, 2});
  model.intInitializer("zero", {0});
  model.node("Slice", "slice", {"x", "starts", "ends", "axes"}, {"sl"});
  Model::intAttribute(model.node("Concat", "concat", {"sl", "sl"}, {"cat"}), "axis", 1);
  model.node("Flatten", "flatten", {"cat"}, {"flat"});
  model.node("Unsqueeze", "unsqueeze", {"flat", "zero"}, {"un"});
  model.node("Squeeze", "squeeze", {"un", "zero"}, {"sq"});
  model.node("Transpose", "reverse", {"x"}, {"rev"});
  Model::intAttribute(model.node("ReduceSum", "sum", {"rev", "zero"}, {"s"}), "keepdims", 0);
  model.node("ReduceMean", "mean", {"x", "zero"}, {"m"});
  model.node("ReduceMax", "max_all", {"x"}, {"a"});
  return model;
}

/// Attributes where later opsets take inputs (opset 9): Slice, Unsqueeze, Squeeze and
/// ReduceMean axes, Dropout's ratio, and a Constant node feeding Reshape.
Model oldOpset() {
  Model model(9);
  model.input("x", {2, 3, 4});
  auto& slice = model.node("Slice", "slice", {"x"}, {"sl"});
  Model::intsAttribute(slice, "starts", {1});
  Model::intsAttribute(slice, "ends", {3});
  Model::intsAttribute(slice, "axes", {2});
  Model::intsAttribute(model.node("Constant", "shape_const", {}, {"shape"}), "value_ints", {6, -1});
  model.node("Reshape", "reshape", {"sl", "shape"}, {"r"});
  Model::intsAttribute(model.node("Unsqueeze", "unsqueeze", {"r"}, {"u"}), "axes", {0, -1});
  Model::intsAttribute(model.node("Squeeze", "squeeze_all", {"u"}, {"q"}), "axes", {});
  Model::intsAttribute(model.node("ReduceMean", "mean", {"q"}, {"m"}), "axes", {1});
  Model::floatAttribute(model.node("Dropout", "drop", {"m"}, {"d"}), "ratio", 0.25f);
  return model;
}

/// Ops autopar does not translate, kept as Opaque ops: TopK typed by ONNX shape inference, and a
/// custom-domain op typed by value_info with the graph input's dynamic batch dim.
Model opaque() {
  Model model;
  model.input("x", {-1, 16});
  model.intInitializer("k", {4});
  model.node("TopK", "topk", {"x", "k"}, {"values", "indices"});
  model.node("Relu", "relu", {"values"}, {"r"});
  model.node("Scale", "scale", {"r", "indices"}, {"y"}).set_domain("com.example");
  model.proto().add_opset_import()->set_domain("com.example");
  model.valueInfo("y", {-1, 4});
  return model;
}

/// Writes `model` as DIRECTORY/NAME.onnx after checking that it imports (dynamic dims as 4, as
/// the fuzzer reads them): a seed the importer rejects would only explore its error paths.
bool write(const std::string& directory, const std::string& name, const Model& model) {
  autopar::frontend::OnnxImportOptions options;
  options.dynamicDimValue = 4;
  options.onWarning = [](const std::string&) {};  // opaque() warns, as it should
  if (auto graph = model.import(options); !graph) {
    std::fprintf(stderr, "make_onnx_seeds: %s: %s\n", name.c_str(), graph.error().message.c_str());
    return false;
  }
  std::ofstream file(directory + "/" + name + ".onnx", std::ios::binary);
  file << model.bytes();
  return static_cast<bool>(file);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_onnx_seeds DIRECTORY\n");
    return 2;
  }
  const std::string directory = argv[1];
  const bool ok = write(directory, "attention", attention()) &&
                  write(directory, "elementwise", elementwise()) &&
                  write(directory, "shapes", shapes()) &&
                  write(directory, "old_opset", oldOpset()) && write(directory, "opaque", opaque());
  return ok ? 0 : 1;
}
