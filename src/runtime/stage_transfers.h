#pragma once
/// \file
/// The tensors a pipelined plan sends between stages (internal to the runtime). Every stage runs
/// its ops on its own ranks with the same layouts as stage 0, shifted by a stage's rank count; a
/// tensor one stage produces and a later stage consumes travels once per consuming stage, in the
/// layout its first consumer there needs: the sender brings it into that layout on its own ranks,
/// then each rank sends its block to the rank at the same mesh position on the consuming stage.
/// Both sides list the transfers in the same order, and a transfer's index is its message tag.

#include <vector>

#include "ir/graph.h"
#include "layout/tensor_layout.h"
#include "rules/graph_sharding.h"

namespace autopar::runtime {

struct Transfer {
  ir::TensorId tensor = -1;
  int fromStage = 0;
  int toStage = 0;
  int fromChunk = 0;  ///< the producing op's model chunk (interleaved schedule), else 0
  int toChunk = 0;    ///< the first consuming op's chunk
  layout::TensorLayout receiverLayout;  ///< on toStage's ranks
  layout::TensorLayout senderLayout;    ///< the same layout on fromStage's ranks
};

/// In graph order of the consuming ops. `opStage` and `opChunk` give each op's stage and model
/// chunk; a stage has `ranksPerStage` ranks.
std::vector<Transfer> stageTransfers(const ir::Graph& graph, const rules::GraphSharding& sharding,
                                     const std::vector<int>& opStage,
                                     const std::vector<int>& opChunk, int ranksPerStage);

/// The rank at `rank`'s mesh position on the other side of the transfer.
int peerOf(const Transfer& transfer, int rank);

}  // namespace autopar::runtime
