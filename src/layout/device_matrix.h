#pragma once
/// \file
/// The seeds' device matrix is a logical mesh of devices; autopar uses cluster::Mesh for it.

#include "cluster/mesh.h"

namespace autopar::layout {

using DeviceMatrix = cluster::Mesh;

}  // namespace autopar::layout
