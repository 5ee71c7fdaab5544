#include "layout/strategy.h"

#include <gtest/gtest.h>

namespace autopar::layout {
namespace {

Strategy parsed(std::string_view text) {
  auto strategy = parseStrategy(text);
  EXPECT_TRUE(strategy.ok()) << (strategy.ok() ? "" : strategy.error().message);
  return strategy.ok() ? *strategy : Strategy{};
}

std::string errorOf(std::string_view text) {
  auto strategy = parseStrategy(text);
  EXPECT_FALSE(strategy.ok()) << text << " parsed";
  return strategy.ok() ? "" : strategy.error().message;
}

TEST(ParseStrategy, ReadsTheSeedsMatMulStrategyInBothBracketStyles) {
  const Strategy expected = {{2, 1}, {1, 4}};
  EXPECT_EQ(parsed("((2,1),(1,4))"), expected);
  EXPECT_EQ(parsed("[[2,1],[1,4]]"), expected);
  EXPECT_EQ(parsed("  ( (2, 1) ,\t[1 ,4 ] ) "), expected);
}

TEST(ParseStrategy, ReadsOneDimAndScalarInputs) {
  EXPECT_EQ(parsed("((8,),(2,4))"), (Strategy{{8}, {2, 4}}));
  EXPECT_EQ(parsed("((8),)"), (Strategy{{8}}));
  EXPECT_EQ(parsed("((2,4),())"), (Strategy{{2, 4}, {}}));
  EXPECT_EQ(parsed("[[]]"), (Strategy{{}}));
  EXPECT_EQ(parsed("()"), Strategy{});
}

TEST(ParseStrategy, NamesTheUnexpectedPosition) {
  EXPECT_EQ(errorOf("((2,x))"), "strategy '((2,x))': expected an integer at position 4");
  EXPECT_EQ(errorOf(""), "strategy '': expected '(' or '[' at position 0");
  EXPECT_EQ(errorOf("(2,1)"), "strategy '(2,1)': expected '(' or '[' at position 1");
  EXPECT_EQ(errorOf("((2,1]"), "strategy '((2,1]': expected ',' or ')' at position 5");
  EXPECT_EQ(errorOf("((2,1)"), "strategy '((2,1)': expected ',' or ')' at position 6");
  EXPECT_EQ(errorOf("((2,,1))"), "strategy '((2,,1))': expected an integer at position 4");
  EXPECT_EQ(errorOf("((2 1))"), "strategy '((2 1))': expected ',' or ')' at position 4");
}

TEST(ParseStrategy, RejectsNonPositiveCuts) {
  EXPECT_EQ(errorOf("((2,0))"), "strategy '((2,0))': expected a positive cut at position 4, got 0");
  EXPECT_EQ(errorOf("((-2,1))"),
            "strategy '((-2,1))': expected a positive cut at position 2, got -2");
  EXPECT_EQ(errorOf("((99999999999999999999,1))"),
            "strategy '((99999999999999999999,1))': integer is too large at position 2");
}

TEST(ParseStrategy, RejectsTrailingCharacters) {
  EXPECT_EQ(errorOf("((2,1)) x"), "strategy '((2,1)) x': unexpected trailing 'x' at position 8");
  EXPECT_EQ(errorOf("((2,1)))"), "strategy '((2,1)))': unexpected trailing ')' at position 7");
}

TEST(StrategyToString, PrintsTheSeedsFormAndRoundTrips) {
  EXPECT_EQ(strategyToString({{2, 1}, {1, 4}}), "((2,1),(1,4))");
  EXPECT_EQ(strategyToString({{8}, {}}), "((8,),())");
  EXPECT_EQ(strategyToString({{2, 4}}), "((2,4),)");
  EXPECT_EQ(strategyToString({}), "()");
  for (const Strategy& strategy : {Strategy{{2, 1}, {1, 4}}, Strategy{{8}}, Strategy{{}, {3}}}) {
    EXPECT_EQ(parsed(strategyToString(strategy)), strategy);
  }
}

TEST(CutProduct, MultipliesTheCutsOfOneInput) {
  EXPECT_EQ(cutProduct({2, 4}), 8);
  EXPECT_EQ(cutProduct({3}), 3);
  EXPECT_EQ(cutProduct({}), 1);
}

}  // namespace
}  // namespace autopar::layout
