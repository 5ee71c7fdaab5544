// Golden tests for the graph files under examples/graphs/ and the example in
// docs/graph-format.md. After an intended change to a builder or to the writer, regenerate the
// examples with
//   AUTOPAR_REGENERATE_EXAMPLES=1 build/<dir>/frontend_tests --gtest_filter='ExampleGraphs.*'
// and review the diff.

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "frontend/graph_json.h"
#include "frontend/seed_models.h"

namespace autopar::frontend {
namespace {

std::string sourcePath(const std::string& relative) {
  return std::string(AUTOPAR_SOURCE_DIR) + "/" + relative;
}

std::string readText(const std::string& path) {
  std::ifstream file(path);
  std::ostringstream text;
  text << file.rdbuf();
  return text.str();
}

/// Compares the file with the dump of `graph`, or rewrites it when regenerating.
void expectGolden(const ir::Graph& graph, const std::string& relative) {
  const std::string path = sourcePath(relative);
  const std::string expected = dumpGraphJson(graphToJson(graph));
  if (std::getenv("AUTOPAR_REGENERATE_EXAMPLES") != nullptr) {
    ASSERT_TRUE(writeGraphJson(graph, path));
  }
  EXPECT_EQ(readText(path), expected) << relative << " is stale; see the comment at the top of "
                                      << "example_graphs_test.cc";
  auto reread = readGraphJson(path);
  ASSERT_TRUE(reread) << reread.error().message;
  EXPECT_EQ(graphToJson(*reread), graphToJson(graph));
}

TEST(ExampleGraphs, FfnIsSeed002WithItsTwoAnnotationsAtBatch32) {
  auto graph = buildAnnotatedFfn(32);
  ASSERT_TRUE(graph) << graph.error().message;
  expectGolden(*graph, "examples/graphs/ffn.json");
}

TEST(ExampleGraphs, MlpIsSeed002sRecursiveExampleAtBatch32) {
  auto graph = buildSeedMlp(32);
  ASSERT_TRUE(graph) << graph.error().message;
  expectGolden(*graph, "examples/graphs/mlp.json");
}

/// The first ```json block after `heading` in a markdown file.
std::string jsonBlockAfter(const std::string& markdown, const std::string& heading) {
  const auto section = markdown.find(heading);
  if (section == std::string::npos) return "";
  const std::string fence = "```json\n";
  const auto start = markdown.find(fence, section);
  if (start == std::string::npos) return "";
  const auto end = markdown.find("```", start + fence.size());
  return markdown.substr(start + fence.size(), end - start - fence.size());
}

TEST(ExampleGraphs, TheCompleteExampleInTheFormatDocParses) {
  const std::string doc = readText(sourcePath("docs/graph-format.md"));
  const std::string example = jsonBlockAfter(doc, "## A complete example");
  ASSERT_FALSE(example.empty()) << "docs/graph-format.md lost its complete example";
  auto graph = parseGraphJson(example, "example.json");
  ASSERT_TRUE(graph) << graph.error().message;
  EXPECT_EQ(graph->name(), "attention-block");
  auto attention = graph->findOp("attn");
  ASSERT_TRUE(attention);
  EXPECT_EQ(graph->op(*attention).attrs.numKvHeads, 2);
  EXPECT_FALSE(graph->op(*graph->findOp("q_proj")).shard.empty());
}

}  // namespace
}  // namespace autopar::frontend
