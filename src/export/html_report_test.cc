#include "export/html_report.h"

#include <gtest/gtest.h>

#include <string>

namespace autopar::exporters {
namespace {

size_t count(const std::string& text, const std::string& what) {
  size_t found = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) {
    ++found;
  }
  return found;
}

/// Two stages: stage 0 runs F0 (0-1 s, 0.25 s of it communication) and B0 (2-4 s) then a gradient
/// sync (4-4.5 s); stage 1 runs F0 (1-2 s) and B0 (2-3 s). The legend draws one of each kind.
HtmlReport twoStages() {
  using Block = sim::TimelineBlock;
  HtmlReport report;
  report.title = "autopar estimate: <toy> & co";
  report.summary = {{"step time", "4.5 s"}};
  report.timeline = {{Block{Block::kForward, 0, 0, 0, 1, 0.25}, Block{Block::kBackward, 0, 0, 2, 4},
                      Block{Block::kGradientSync, 0, 0, 4, 4.5, 0.5}},
                     {Block{Block::kForward, 0, 0, 1, 2}, Block{Block::kBackward, 0, 0, 2, 3}}};
  report.stepSeconds = 4.5;
  report.stageMemory.resize(2);
  report.stageMemory[0].parameterBytes = 30LL << 30;
  report.stageMemory[1].activationBytes = 90LL << 30;
  report.deviceMemoryBytes = 80LL << 30;
  report.memoryMarginBytes = 4LL << 30;
  return report;
}

TEST(HtmlReport, DrawsEveryStageItsBlocksBubblesAndMemoryAgainstTheDevice) {
  const std::string page = renderHtmlReport(twoStages());
  EXPECT_EQ(page.rfind("<!DOCTYPE html>", 0), 0U);
  EXPECT_EQ(count(page, "<g class=\"stage\" data-stage="), 2U);
  EXPECT_EQ(count(page, "<g class=\"stage-memory\" data-stage="), 2U);
  EXPECT_EQ(count(page, "class=\"blk fwd\""), 2U);
  EXPECT_EQ(count(page, "class=\"blk bwd\""), 2U);
  EXPECT_EQ(count(page, "class=\"blk sync\""), 1U);
  EXPECT_EQ(count(page, "class=\"comm\" x="), 1U) << "F0's communication on stage 0";
  // Stage 0 idles 1-2 s; stage 1 idles 0-1 s and 3-4.5 s.
  EXPECT_EQ(count(page, "class=\"idle\" x="), 3U);
  EXPECT_NE(page.find("stage 1: idle (bubble) 1.500 s"), std::string::npos);
  // 1 s of 4.5 s over the 1100-unit plot, after the 84-unit labels.
  EXPECT_NE(page.find("x=\"84.00\" y=\"0.00\" width=\"244.44\""), std::string::npos);
  // Stage 1 is over the device: the bars scale to it, the capacity and margin lines inside.
  EXPECT_NE(page.find("device 80.00 GiB"), std::string::npos);
  EXPECT_NE(page.find("less margin 4.00 GiB"), std::string::npos);
  EXPECT_NE(page.find("stage 1: activations 90.00 GiB"), std::string::npos);
  // Text is escaped; there is no script; the same report gives the same bytes.
  EXPECT_NE(page.find("<h1>autopar estimate: &lt;toy&gt; &amp; co</h1>"), std::string::npos);
  EXPECT_EQ(page.find("<script"), std::string::npos);
  EXPECT_EQ(renderHtmlReport(twoStages()), page);
}

TEST(HtmlReport, ListsCandidatesAndTablesOnlyWhenGiven) {
  HtmlReport report = twoStages();
  EXPECT_EQ(renderHtmlReport(report).find("<table"), std::string::npos);
  report.candidates = {{"TP 8 PP 2", 4.5, 70LL << 30, "chosen"},
                       {"TP 1 PP 1", 3.0, 200LL << 30, "over memory by 120.00 GiB"}};
  report.tables = {{"Op strategies", {"op", "strategy"}, {{"mm", "((2,1),(1,4))"}}, 7}};
  const std::string page = renderHtmlReport(report);
  EXPECT_EQ(count(page, "<table"), 2U);
  EXPECT_NE(page.find("<td>over memory by 120.00 GiB</td>"), std::string::npos);
  EXPECT_NE(page.find("<td>((2,1),(1,4))</td>"), std::string::npos);
  EXPECT_NE(page.find("7 more rows left out."), std::string::npos);
}

}  // namespace
}  // namespace autopar::exporters
