#include "layout/strategy.h"

#include <charconv>
#include <cstdint>
#include <functional>
#include <numeric>

namespace autopar::layout {

namespace {

/// A recursive-descent reader over the seeds' nested-tuple notation. Positions in errors are
/// 0-based character offsets into the original text.
class StrategyReader {
 public:
  explicit StrategyReader(std::string_view text) : text_(text) {}

  Expected<Strategy> read() {
    Strategy strategy;
    auto list = readList([&]() -> Status {
      auto inputCuts = readInputCuts();
      if (!inputCuts) return inputCuts.error();
      strategy.push_back(std::move(*inputCuts));
      return {};
    });
    if (!list) return list.error();
    skipSpaces();
    if (pos_ < text_.size()) {
      return fail("unexpected trailing '" + std::string(1, text_[pos_]) + "'");
    }
    return strategy;
  }

 private:
  /// One input's cuts: "(2,1)", "[8]", "(8,)" or "()".
  Expected<std::vector<int64_t>> readInputCuts() {
    std::vector<int64_t> cuts;
    auto list = readList([&]() -> Status {
      auto cut = readCut();
      if (!cut) return cut.error();
      cuts.push_back(*cut);
      return {};
    });
    if (!list) return list.error();
    return cuts;
  }

  /// Reads "(item, item, ...)" or "[...]" with an optional trailing comma, calling `readItem` at
  /// each item.
  Status readList(const std::function<Status()>& readItem) {
    skipSpaces();
    if (pos_ >= text_.size() || (text_[pos_] != '(' && text_[pos_] != '[')) {
      return fail("expected '(' or '['");
    }
    const char close = text_[pos_] == '(' ? ')' : ']';
    ++pos_;
    skipSpaces();
    while (pos_ >= text_.size() || text_[pos_] != close) {
      auto item = readItem();
      if (!item) return item;
      skipSpaces();
      if (pos_ < text_.size() && text_[pos_] == ',') {
        ++pos_;
        skipSpaces();
        continue;
      }
      if (pos_ >= text_.size() || text_[pos_] != close) {
        return fail("expected ',' or '" + std::string(1, close) + "'");
      }
    }
    ++pos_;
    return {};
  }

  Expected<int64_t> readCut() {
    skipSpaces();
    const size_t start = pos_;
    size_t end = pos_;
    if (end < text_.size() && text_[end] == '-') ++end;
    while (end < text_.size() && text_[end] >= '0' && text_[end] <= '9') ++end;
    const bool hasDigits = end > start && text_[end - 1] >= '0' && text_[end - 1] <= '9';
    if (!hasDigits) return fail("expected an integer");
    int64_t value = 0;
    auto [ptr, ec] = std::from_chars(text_.data() + start, text_.data() + end, value);
    if (ec != std::errc() || ptr != text_.data() + end) return fail("integer is too large");
    if (value <= 0) {
      return Error{fail("expected a positive cut").message + ", got " + std::to_string(value)};
    }
    pos_ = end;
    return value;
  }

  void skipSpaces() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' ||
                                   text_[pos_] == '\n' || text_[pos_] == '\r')) {
      ++pos_;
    }
  }

  Error fail(const std::string& what) const {
    return Error{"strategy '" + std::string(text_) + "': " + what + " at position " +
                 std::to_string(pos_)};
  }

  std::string_view text_;
  size_t pos_ = 0;
};

std::string tupleToString(const std::vector<std::string>& items) {
  std::string out = "(";
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += ",";
    out += items[i];
  }
  // Python spells a one-element tuple "(8,)"; the parser accepts both forms.
  if (items.size() == 1) out += ",";
  return out + ")";
}

}  // namespace

Expected<Strategy> parseStrategy(std::string_view text) { return StrategyReader(text).read(); }

std::string strategyToString(const Strategy& strategy) {
  std::vector<std::string> inputs;
  inputs.reserve(strategy.size());
  for (const auto& inputCuts : strategy) {
    std::vector<std::string> cuts;
    cuts.reserve(inputCuts.size());
    for (int64_t cut : inputCuts) cuts.push_back(std::to_string(cut));
    inputs.push_back(tupleToString(cuts));
  }
  return tupleToString(inputs);
}

int64_t cutProduct(const std::vector<int64_t>& inputCuts) {
  return std::accumulate(inputCuts.begin(), inputCuts.end(), int64_t{1}, std::multiplies<>());
}

}  // namespace autopar::layout
