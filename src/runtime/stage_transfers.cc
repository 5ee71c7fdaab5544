#include "runtime/stage_transfers.h"

#include <algorithm>
#include <set>
#include <utility>

namespace autopar::runtime {

std::vector<Transfer> stageTransfers(const ir::Graph& graph, const rules::GraphSharding& sharding,
                                     const std::vector<int>& opStage,
                                     const std::vector<int>& opChunk, int ranksPerStage) {
  auto chunkOf = [&](ir::OpId op) {
    return opChunk.empty() ? 0 : opChunk[static_cast<size_t>(op)];
  };
  std::vector<Transfer> transfers;
  std::set<std::pair<ir::TensorId, int>> seen;
  for (const ir::Op& op : graph.ops()) {
    const int to = opStage[static_cast<size_t>(op.id)];
    for (size_t i = 0; i < op.inputs.size(); ++i) {
      const ir::Tensor& tensor = graph.tensor(op.inputs[i]);
      if (tensor.producer == ir::kNoOp) continue;
      const int from = opStage[static_cast<size_t>(tensor.producer)];
      if (from == to || !seen.insert({tensor.id, to}).second) continue;
      layout::TensorLayout receiver = sharding.ops[static_cast<size_t>(op.id)].inputs[i];
      layout::TensorLayout sender = receiver;
      std::vector<int> ranks = receiver.deviceMatrix.ranks();
      for (int& rank : ranks) rank -= (to - from) * ranksPerStage;
      sender.deviceMatrix = cluster::Mesh(receiver.deviceMatrix.shape(), ranks);
      transfers.push_back(Transfer{tensor.id, from, to, chunkOf(tensor.producer), chunkOf(op.id),
                                   std::move(receiver), std::move(sender)});
    }
  }
  return transfers;
}

int peerOf(const Transfer& transfer, int rank) {
  const auto& senders = transfer.senderLayout.deviceMatrix.ranks();
  const auto& receivers = transfer.receiverLayout.deviceMatrix.ranks();
  const auto at = std::find(senders.begin(), senders.end(), rank);
  if (at != senders.end()) return receivers[static_cast<size_t>(at - senders.begin())];
  return senders[static_cast<size_t>(std::find(receivers.begin(), receivers.end(), rank) -
                                     receivers.begin())];
}

}  // namespace autopar::runtime
