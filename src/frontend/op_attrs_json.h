#pragma once
/// \file
/// The "attrs" object of an op in graph JSON: snake_case keys mapped to ir::OpAttrs fields. Each
/// op kind accepts only the keys it reads (op_kind.h), so a typo or a misplaced attribute is an
/// error rather than a silent no-op.
///
/// Example: MatMul {"transpose_b": true} sets OpAttrs::transposeB; the same key on an Add fails
/// with "ops[4].attrs: unknown attribute 'transpose_b' for Add (it takes no attributes)".

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "ir/op.h"
#include "util/expected.h"

namespace autopar::frontend {

/// The attribute keys `kind` accepts, in documentation order, e.g. MatMul: transpose_a,
/// transpose_b; FlashAttention: num_heads, num_kv_heads, causal; ReLU: none.
std::vector<std::string_view> attrKeysOf(ir::OpKind kind);

/// Reads an "attrs" object found at `path` (e.g. "ops[2].attrs"). Missing keys keep the
/// OpAttrs defaults. Values are type- and range-checked here; whether they fit the inputs'
/// shapes (a perm of the right rank, say) is for shape inference.
Expected<ir::OpAttrs> attrsFromJson(ir::OpKind kind, const nlohmann::json& attrs,
                                    const std::string& path);

/// The attributes `kind` reads whose values differ from the OpAttrs defaults, as an object
/// (empty when all are defaults). attrsFromJson(kind, attrsToJson(kind, a)) reproduces every
/// field that `kind` reads.
nlohmann::json attrsToJson(ir::OpKind kind, const ir::OpAttrs& attrs);

}  // namespace autopar::frontend
