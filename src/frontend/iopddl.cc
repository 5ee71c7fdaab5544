#include "frontend/iopddl.h"

#include <fmt/format.h>
#include <zlib.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "util/json_fields.h"
#include "util/limits.h"
#include "util/text_file.h"

namespace autopar::frontend {

using autopar::json::childPath;
using autopar::json::indexPath;
using autopar::json::jsonTypeName;
using autopar::json::parseJsonText;
using autopar::json::readIntList;
using autopar::json::requireField;

using nlohmann::json;

namespace {

/// The file read through the bounded reader (util/text_file.h: a regular file or a pipe, never a
/// device or a FIFO nobody writes); gzip data (magic 1f 8b) inflated with zlib in memory, up to
/// limits::kMaxDecompressedBytes; anything else as is.
Expected<std::string> readMaybeGzip(const std::string& path) {
  auto raw = readTextFile(path);
  if (!raw) return raw.error();
  if (raw->size() < 2 || static_cast<unsigned char>((*raw)[0]) != 0x1f ||
      static_cast<unsigned char>((*raw)[1]) != 0x8b) {
    return raw;
  }
  z_stream stream{};
  if (inflateInit2(&stream, 16 + MAX_WBITS) != Z_OK) {  // 16: a gzip header, not zlib's
    return Error{fmt::format("{}: cannot start inflating the gzip data", path)};
  }
  stream.next_in = reinterpret_cast<Bytef*>(raw->data());
  stream.avail_in = static_cast<uInt>(raw->size());
  std::string text;
  char buffer[1 << 16];
  int status = Z_OK;
  while (status == Z_OK) {
    stream.next_out = reinterpret_cast<Bytef*>(buffer);
    stream.avail_out = sizeof(buffer);
    status = inflate(&stream, Z_NO_FLUSH);
    text.append(buffer, sizeof(buffer) - stream.avail_out);
    if (text.size() > limits::kMaxDecompressedBytes) {
      inflateEnd(&stream);
      return Error{fmt::format("{}: expands to more than {} MiB, the limit (docs/limits.md)", path,
                               limits::kMaxDecompressedBytes >> 20)};
    }
  }
  inflateEnd(&stream);
  if (status != Z_STREAM_END)
    return Error{fmt::format("{}: not a readable gzip or JSON file", path)};
  return text;
}

/// An array of integer arrays, each of `width` entries when width > 0.
Expected<std::vector<std::vector<int64_t>>> intLists(const json& object, const std::string& key,
                                                     const std::string& path, size_t width) {
  auto field = requireField(object, path, key);
  if (!field) return field.error();
  const std::string fieldPath = childPath(path, key);
  if (!(*field)->is_array()) {
    return Error{fmt::format("{}: expected an array, got {}", fieldPath, jsonTypeName(**field))};
  }
  std::vector<std::vector<int64_t>> lists;
  lists.reserve((*field)->size());
  for (size_t i = 0; i < (*field)->size(); ++i) {
    auto list = readIntList((**field)[i], indexPath(fieldPath, i));
    if (!list) return list.error();
    if (width > 0 && list->size() != width) {
      return Error{fmt::format("{}: expected {} entries, got {}", indexPath(fieldPath, i), width,
                               list->size())};
    }
    lists.push_back(std::move(*list));
  }
  return lists;
}

Status readNodes(const json& nodes, ir::IntraOpProblem& problem) {
  const std::string path = "problem.nodes";
  auto intervals = intLists(nodes, "intervals", path, 2);
  if (!intervals) return intervals.error();
  auto costs = intLists(nodes, "costs", path, 0);
  if (!costs) return costs.error();
  auto usages = intLists(nodes, "usages", path, 0);
  if (!usages) return usages.error();
  if (costs->size() != intervals->size() || usages->size() != intervals->size()) {
    return Error{
        fmt::format("{}: intervals, costs and usages have {}, {} and {} entries; expected "
                    "one per node in each",
                    path, intervals->size(), costs->size(), usages->size())};
  }
  problem.nodes.resize(intervals->size());
  for (size_t i = 0; i < intervals->size(); ++i) {
    auto& node = problem.nodes[i];
    node.start = (*intervals)[i][0];
    node.end = (*intervals)[i][1];
    node.costs = std::move((*costs)[i]);
    node.usages = std::move((*usages)[i]);
  }
  return {};
}

Status readEdges(const json& edges, ir::IntraOpProblem& problem) {
  const std::string path = "problem.edges";
  auto nodes = intLists(edges, "nodes", path, 2);
  if (!nodes) return nodes.error();
  auto costs = intLists(edges, "costs", path, 0);
  if (!costs) return costs.error();
  if (costs->size() != nodes->size()) {
    return Error{fmt::format("{}: nodes has {} entries but costs has {}; expected one per edge",
                             path, nodes->size(), costs->size())};
  }
  problem.edges.resize(nodes->size());
  for (size_t e = 0; e < nodes->size(); ++e) {
    problem.edges[e].from = static_cast<int>((*nodes)[e][0]);
    problem.edges[e].to = static_cast<int>((*nodes)[e][1]);
    problem.edges[e].costs = std::move((*costs)[e]);
  }
  return {};
}

Expected<ir::IntraOpProblem> problemFromJson(const json& document) {
  auto problemField = requireField(document, "", "problem");
  if (!problemField) return problemField.error();
  const json& body = **problemField;
  if (!body.is_object()) {
    return Error{fmt::format("problem: expected an object, got {}", jsonTypeName(body))};
  }
  ir::IntraOpProblem problem;
  if (auto it = body.find("name"); it != body.end() && it->is_string()) problem.name = *it;
  auto nodes = requireField(body, "problem", "nodes");
  if (!nodes) return nodes.error();
  if (auto status = readNodes(**nodes, problem); !status) return status.error();
  if (auto it = body.find("edges"); it != body.end()) {
    if (auto status = readEdges(*it, problem); !status) return status.error();
  }
  problem.usageLimit = -1;
  if (auto it = body.find("usage_limit"); it != body.end()) {
    if (!it->is_number_integer() || it->get<int64_t>() < 0) {
      return Error{
          fmt::format("problem.usage_limit: expected an integer >= 0, got {}", it->dump())};
    }
    problem.usageLimit = it->get<int64_t>();
  }
  if (auto status = ir::validateProblem(problem); !status) return status.error().in("problem");
  return problem;
}

}  // namespace

Expected<ir::IntraOpProblem> parseIopddl(const std::string& text, const std::string& sourceName) {
  auto document = parseJsonText(text);
  if (!document) return document.error().in(sourceName);
  auto problem = problemFromJson(*document);
  if (!problem) return problem.error().in(sourceName);
  return problem;
}

Expected<ir::IntraOpProblem> readIopddl(const std::string& path) {
  auto text = readMaybeGzip(path);
  if (!text) return text.error();
  return parseIopddl(*text, path);
}

Expected<std::vector<int>> readIopddlSolution(const std::string& path) {
  auto text = readMaybeGzip(path);
  if (!text) return text.error();
  return parseIopddlSolution(*text, path);
}

Expected<std::vector<int>> parseIopddlSolution(const std::string& text,
                                               const std::string& sourceName) {
  std::istringstream lines(text);
  std::string line;
  std::string last;
  while (std::getline(lines, line)) {
    if (line.find_first_not_of(" \t\r") != std::string::npos) last = line;
  }
  auto document = parseJsonText(last);
  if (!document) return document.error().in(sourceName);
  auto list = readIntList(*document, "solution");
  if (!list) return list.error().in(sourceName);
  return std::vector<int>(list->begin(), list->end());
}

}  // namespace autopar::frontend
