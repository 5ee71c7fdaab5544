#include "frontend/mindspore_strategy.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace autopar::frontend {
namespace {

std::string writeFile(const std::string& name, const std::string& text) {
  const std::string path = (std::filesystem::temp_directory_path() / name).string();
  std::ofstream(path) << text;
  return path;
}

std::string errorOf(const std::string& text) {
  auto read = readOpStrategyFile(writeFile("autopar_strategy_error.json", text));
  return read ? "ok" : read.error().message;
}

TEST(MindSporeStrategyFile, ReadsEachOpsInputStrategyAndStage) {
  // As MindSpore's SAVE writes it: one line, keys sorted.
  const std::string path = writeFile(
      "autopar_strategy.json",
      R"({"current_stage":0,"parallel_strategy_item":{"Default/Add-op1":{"parallel_strategy":)"
      R"([[4,2],[4,2]],"stage":1},"Default/MatMul-op0":{"parallel_strategy":[[4,2],[2,1]],)"
      R"("stage":0}}})");
  auto entries = readOpStrategyFile(path);
  ASSERT_TRUE(entries.ok()) << entries.error().message;
  ASSERT_EQ(entries->size(), 2U);
  EXPECT_EQ((*entries)[0].op, "Default/Add-op1");
  EXPECT_EQ((*entries)[0].stage, 1);
  EXPECT_EQ((*entries)[1].strategy, (ir::StrategyCuts{{4, 2}, {2, 1}}));
}

TEST(MindSporeStrategyFile, NamesTheFieldAtFault) {
  EXPECT_NE(errorOf(R"({"current_stage":0})")
                .find("autopar_strategy_error.json: top level: missing required field "
                      "'parallel_strategy_item'"),
            std::string::npos);
  EXPECT_NE(errorOf(R"({"parallel_strategy_item":{"mm":{"stage":0,"parallel_strategy":[[2,0]]}}})")
                .find("parallel_strategy_item.mm.parallel_strategy[0][1]: expected a positive"),
            std::string::npos);
  EXPECT_NE(errorOf(R"({"parallel_strategy_item":{"mm":{"stage":-1,"parallel_strategy":[]}}})")
                .find("parallel_strategy_item.mm.stage: expected a stage from 0"),
            std::string::npos);
  EXPECT_NE(errorOf(R"({"parallel_strategy_item":{"mm":{"stage":0,"parallel_strategy":[[2]],)"
                    R"("layout":1}}})")
                .find("unknown field 'layout'"),
            std::string::npos);
  // What autopar does not read is refused, not dropped.
  EXPECT_NE(errorOf(R"({"parallel_strategy_item":{},"parallel_out_strategy_item":{"mm":{}}})")
                .find("parallel_out_strategy_item: output strategies and tensor layouts are not "
                      "read"),
            std::string::npos);
  EXPECT_NE(errorOf("[1]").find("expected an object with parallel_strategy_item, got array"),
            std::string::npos);
}

}  // namespace
}  // namespace autopar::frontend
