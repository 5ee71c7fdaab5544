#pragma once
/// \file
/// The keys a MindFormers run yaml may hold, per section autopar reads: the ones autopar honours
/// (docs/mindformers-yaml.md) and the ones MindFormers' own run yamls carry that autopar knowingly
/// leaves alone (optimizer, datasets, callbacks, ...). Any other key in those sections is a
/// mistake the user should hear about: a misspelt `pipline_stage` silently ignored would plan
/// something else than asked.
///   checkKnownKeys(root) -> "parallel_config.pipline_stage: unknown key; did you mean
///                            pipeline_stage?"

#include <yaml-cpp/yaml.h>

#include "util/expected.h"

namespace autopar::frontend {

/// Fails on the first key given twice in one mapping, then on the first key, in file order, that
/// its section does not know, naming the closest known key.
Status checkKnownKeys(const YAML::Node& root);

}  // namespace autopar::frontend
