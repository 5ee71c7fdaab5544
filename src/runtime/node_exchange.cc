#include "runtime/node_exchange.h"

#include <fmt/format.h>

#include <thread>

#include "runtime/launcher.h"

namespace autopar::runtime {

namespace {

constexpr const char* kPrefix = "autopar/nodes/";

std::string key(const std::string& name) { return kPrefix + name; }

std::vector<std::string> gather(c10d::Store& store, const NodeGroup& group,
                                const std::string& blob) {
  store.set(key(std::to_string(group.nodeRank)), std::vector<uint8_t>(blob.begin(), blob.end()));
  if (group.nodeRank != 0) {
    store.wait({key("done")});
    store.add(key("acked"), 1);
    return {};
  }
  std::vector<std::string> blobs;
  for (int node = 0; node < group.nodes; ++node) {
    const std::vector<uint8_t> bytes = store.get(key(std::to_string(node)));
    blobs.emplace_back(bytes.begin(), bytes.end());
  }
  store.set(key("done"), std::vector<uint8_t>{1});
  // Stay until every node has seen "done": the store lives in this process.
  const auto deadline = std::chrono::steady_clock::now() + group.timeout;
  while (store.add(key("acked"), 0) < group.nodes - 1) {
    if (std::chrono::steady_clock::now() > deadline) {
      throw std::runtime_error("timed out waiting for the other nodes to finish");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return blobs;
}

}  // namespace

Expected<std::vector<std::string>> gatherToNodeZero(const NodeGroup& group,
                                                    const std::string& blob) {
  if (group.nodes == 1) return std::vector<std::string>{blob};
  try {
    // The nodes meet at a TCP store as a job's ranks do, node 0 hosting it.
    Connection nodes;
    nodes.rank = group.nodeRank;
    nodes.world = group.nodes;
    nodes.address = group.address;
    nodes.port = group.port;
    nodes.hostsStore = group.nodeRank == 0;
    nodes.timeout = group.timeout;
    return gather(*connectStore(nodes), group, blob);
  } catch (const std::exception& error) {
    // c10d's messages run to several lines with a C++ trace: the first line says what failed.
    std::string message = error.what();
    message = message.substr(0, message.find('\n'));
    return Error{fmt::format("node {} of {}: exchanging results through {}:{}: {}", group.nodeRank,
                             group.nodes, group.address, group.port, message)};
  }
}

}  // namespace autopar::runtime
