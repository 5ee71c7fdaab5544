#include "util/json_fields.h"

#include <gtest/gtest.h>

#include "util/limits.h"

namespace autopar::json {
namespace {

using Json = nlohmann::json;

TEST(JsonFields, Paths) {
  EXPECT_EQ(childPath("", "ops"), "ops");
  EXPECT_EQ(childPath(indexPath("ops", 3), "inputs"), "ops[3].inputs");
  EXPECT_EQ(indexPath("ops[3].inputs", 1), "ops[3].inputs[1]");
}

TEST(JsonFields, ParseErrorLineCountsNewlinesBeforeTheFailingByte) {
  auto error = parseJsonText("{\n\"a\": 1,\n\n\"b\": tru\n}");
  ASSERT_FALSE(error);
  EXPECT_EQ(error.error().message.substr(0, 30), "line 4: JSON parse error: synt");
  // An unterminated string that runs into a newline is reported on the line it started on.
  auto unterminated = parseJsonText("{\n\"a\": \"x\n\"}");
  ASSERT_FALSE(unterminated);
  EXPECT_EQ(unterminated.error().message.substr(0, 8), "line 2: ");
  EXPECT_EQ(unterminated.error().message.find('\n'), std::string::npos);
}

TEST(JsonFields, Integers) {
  EXPECT_EQ(*readInt(Json(-3), "x"), -3);
  EXPECT_EQ(*readInt(Json(9'223'372'036'854'775'807ULL), "x"), 9'223'372'036'854'775'807LL);
  EXPECT_EQ(readInt(Json(9'223'372'036'854'775'808ULL), "x").error().message,
            "x: 9223372036854775808 does not fit in a 64-bit integer");
  EXPECT_EQ(readInt(Json(2.0), "x").error().message, "x: expected an integer, got 2.0");
  EXPECT_EQ(readInt(Json("2"), "x").error().message, "x: expected an integer, got string");
  EXPECT_EQ(readPositiveInt(Json(-1), "x").error().message,
            "x: expected a positive integer, got -1");
}

TEST(JsonFields, ListsAndObjects) {
  EXPECT_EQ(*readStringList(Json::parse(R"(["a", "b"])"), "xs"),
            (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(readStringList(Json::parse(R"({"a": 1})"), "xs").error().message,
            "xs: expected an array of strings, got object");
  EXPECT_EQ(readPositiveIntList(Json::parse("[1, 0]"), "shape").error().message,
            "shape[1]: expected a positive integer, got 0");
  EXPECT_TRUE(checkObject(Json::parse(R"({"a": 1})"), "obj", {"a", "b"}));
  EXPECT_EQ(checkObject(Json::parse(R"({"c": 1})"), "obj", {"a", "b"}).error().message,
            "obj: unknown field 'c' (expected one of: a, b)");
  EXPECT_EQ(requireField(Json::object(), "obj", "a").error().message,
            "obj: missing required field 'a'");
  EXPECT_EQ(readBool(Json(nullptr), "flag").error().message,
            "flag: expected true or false, got null");
}

/// A name the outputs repeat cannot break a comment line: no control character, bounded.
TEST(JsonFields, ALabelHasNoControlCharacters) {
  EXPECT_EQ(*readLabel(Json("meta-llama/Llama-3.1-8B"), "_name_or_path"),
            "meta-llama/Llama-3.1-8B");
  const std::string expected =
      "_name_or_path: expected a name of at most 256 characters without control characters";
  EXPECT_EQ(readLabel(Json("x\nPYTHON\nrm -rf ~"), "_name_or_path").error().message, expected);
  EXPECT_EQ(readLabel(Json(std::string("a\x7f")), "_name_or_path").error().message, expected);
  EXPECT_TRUE(readLabel(Json(std::string(autopar::limits::kMaxNameLength, 'a')), "n").ok());
  EXPECT_FALSE(readLabel(Json(std::string(autopar::limits::kMaxNameLength + 1, 'a')), "n").ok());
  EXPECT_EQ(readLabel(Json(3), "n").error().message, "n: expected a string, got number");
}

}  // namespace
}  // namespace autopar::json
