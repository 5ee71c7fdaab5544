#include "plan/plan_json.h"

#include <gtest/gtest.h>

#include "plan/validate.h"

namespace autopar::plan {
namespace {

/// A two-stage plan of no ops on 16 devices, annotated TP 2 DP 4 with selective recompute.
Plan annotatedPlan() {
  Plan plan;
  plan.devices = 16;
  plan.pipeline = ir::PipelineShape{2, 1, 8, ir::Schedule::k1F1B};
  plan.features.recompute = ir::Recompute::kSelective;
  plan.setup.emplace();
  static_cast<ir::ParallelConfig&>(*plan.setup) =
      ir::ParallelConfig{.tp = 2,
                         .pp = 2,
                         .dp = 4,
                         .mbs = 2,
                         .sequenceParallel = true,
                         .recompute = ir::Recompute::kSelective,
                         .zero = 1};
  return plan;
}

Expected<Plan> roundTrip(const Plan& plan) {
  return parsePlanJson(planToJson(plan).dump(), "p.json");
}

TEST(PlanJsonTest, ParallelConfigRoundTrips) {
  const Plan plan = annotatedPlan();
  auto read = roundTrip(plan);
  ASSERT_TRUE(read) << read.error().message;
  ASSERT_TRUE(read->setup);
  EXPECT_EQ(static_cast<const ir::ParallelConfig&>(*read->setup),
            static_cast<const ir::ParallelConfig&>(*plan.setup));
  EXPECT_EQ(read->features.recompute, ir::Recompute::kSelective);
}

TEST(PlanJsonTest, PlanWithoutConfigurationHasNone) {
  Plan plan = annotatedPlan();
  plan.setup.reset();
  const auto json = planToJson(plan);
  EXPECT_FALSE(json.contains("parallel_config"));
  auto read = roundTrip(plan);
  ASSERT_TRUE(read);
  EXPECT_FALSE(read->setup);
}

TEST(PlanJsonTest, BadParallelConfigNamesTheField) {
  auto json = planToJson(annotatedPlan());
  json["parallel_config"]["zero_stage"] = 4;
  auto read = parsePlanJson(json.dump(), "p.json");
  ASSERT_FALSE(read);
  EXPECT_EQ(read.error().message, "p.json: parallel_config.zero_stage: 4: expected 0, 1, 2 or 3");

  json = planToJson(annotatedPlan());
  json["parallel_config"]["tp"] = 0;
  read = parsePlanJson(json.dump(), "p.json");
  ASSERT_FALSE(read);
  EXPECT_EQ(read.error().message,
            "p.json: parallel_config.tp: 0 is not an integer from 1 to 16777216");

  json = planToJson(annotatedPlan());
  json["parallel_config"]["schedule"] = "zigzag";
  read = parsePlanJson(json.dump(), "p.json");
  ASSERT_FALSE(read);
  EXPECT_NE(read.error().message.find("parallel_config.schedule"), std::string::npos);
}

// An integer past int64 is refused, not wrapped: 2^64 - 1 used to be read as -1.
TEST(PlanJsonTest, IntegersPastInt64AreRefused) {
  auto json = planToJson(annotatedPlan());
  json["parallel_config"]["tp"] = UINT64_MAX;
  auto read = parsePlanJson(json.dump(), "p.json");
  ASSERT_FALSE(read);
  EXPECT_EQ(read.error().message, "p.json: parallel_config.tp: expected an integer");
}

TEST(PlanValidateTest, ParallelConfigAgreesWithThePlan) {
  const ir::Graph empty;
  Plan plan = annotatedPlan();
  EXPECT_TRUE(validatePlan(plan, empty, 16));

  plan.setup->pp = 4;
  auto status = validatePlan(plan, empty, 16);
  ASSERT_FALSE(status);
  EXPECT_EQ(status.error().message, "parallel_config.pp: 4 but features.pipeline.stages is 2");

  plan = annotatedPlan();
  plan.setup->dp = 3;
  status = validatePlan(plan, empty, 16);
  ASSERT_FALSE(status);
  EXPECT_EQ(status.error().message,
            "parallel_config: tp 2 x cp 1 x dp 3 = 6 devices per stage, which does not divide "
            "the 8 of each stage");

  plan = annotatedPlan();
  plan.setup->ep = 8;
  status = validatePlan(plan, empty, 16);
  ASSERT_FALSE(status);
  EXPECT_NE(status.error().message.find("parallel_config.ep: 8 does not divide dp 4"),
            std::string::npos);

  plan = annotatedPlan();
  plan.setup->recompute = ir::Recompute::kFull;
  EXPECT_FALSE(validatePlan(plan, empty, 16));
}

TEST(PlanJsonTest, DataParallelSharesRoundTrip) {
  Plan plan = annotatedPlan();
  EXPECT_FALSE(planToJson(plan).contains("data_parallel_shares"));
  plan.dataParallelShares = {24, 8, 16, 16};
  auto read = roundTrip(plan);
  ASSERT_TRUE(read) << read.error().message;
  EXPECT_EQ(read->dataParallelShares, plan.dataParallelShares);
  auto json = planToJson(plan);
  json["data_parallel_shares"] = "24,8";
  EXPECT_EQ(parsePlanJson(json.dump(), "p.json").error().message,
            "p.json: data_parallel_shares: expected a list of integers");
}

/// Shares the runtime can run: one per replica of a configuration that fills the devices, each
/// whole samples in every micro-batch.
TEST(PlanValidateTest, DataParallelSharesFitTheConfiguration) {
  const ir::Graph empty;
  Plan plan = annotatedPlan();
  plan.dataParallelShares = {24, 8, 16, 16};
  EXPECT_TRUE(validatePlan(plan, empty, 16));
  auto refusal = [&](std::vector<int64_t> shares) {
    Plan changed = plan;
    changed.dataParallelShares = std::move(shares);
    auto status = validatePlan(changed, empty, 16);
    return status ? std::string() : status.error().message;
  };
  EXPECT_EQ(refusal({24, 8}), "data_parallel_shares: 2 shares, expected one per replica (dp 4)");
  EXPECT_EQ(refusal({24, 8, 12, 20}),
            "data_parallel_shares[2]: 12; expected a multiple of the 8 micro-batches from 1 to "
            "1048576");
  EXPECT_EQ(refusal({24, 8, 16, 0}),
            "data_parallel_shares[3]: 0; expected a multiple of the 8 micro-batches from 1 to "
            "1048576");
  plan.setup->dp = 2;
  EXPECT_EQ(refusal({24, 8}),
            "data_parallel_shares: tp 2 x cp 1 x dp 2 x pp 2 leaves some of the 16 devices idle; "
            "shares need every device in a replica");
  plan.setup.reset();
  EXPECT_EQ(refusal({24, 8}),
            "data_parallel_shares: needs parallel_config, whose dp replicas they share");
}

/// What `run` needs of the ranks and stages, validate checks first (issue 20: such plans passed
/// validate and failed inside run).
TEST(PlanValidateTest, RanksAreDistinctDevicesAndStagesStartAtZero) {
  const ir::Graph empty;
  Plan plan = annotatedPlan();
  plan.ranks = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 99};
  EXPECT_EQ(validatePlan(plan, empty, 16).error().message,
            "ranks: 99 is not a device of the 16-device mesh");
  plan.ranks.back() = -1;
  EXPECT_EQ(validatePlan(plan, empty, 16).error().message,
            "ranks: -1 is not a device of the 16-device mesh");
  plan.ranks.back() = 0;
  EXPECT_EQ(validatePlan(plan, empty, 16).error().message, "ranks: device 0 is listed twice");
  plan.ranks.back() = 15;
  EXPECT_TRUE(validatePlan(plan, empty, 16));

  plan = annotatedPlan();
  OpRecord op;
  op.name = "x";
  op.stage = -1;
  plan.ops.push_back(op);
  EXPECT_EQ(validatePlan(plan, empty, 16).error().message,
            "ops 'x': stage -1 chunk 0; expected numbers from 0");
  plan.ops.back().stage = 2;
  EXPECT_EQ(validatePlan(plan, empty, 16).error().message,
            "ops[].stage: an op on stage 2, but features.pipeline.stages is 2");
}

}  // namespace
}  // namespace autopar::plan
