// The shared op-type vocabulary. Every graph (built, imported or loaded) maps its
// ops onto these ids, so a policy trained on one graph reads another's features.
// Appending is safe; reordering changes node features and breaks saved files.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace goenv {

// How an op may be fused (docs/simulator.md): elementwise ops fuse with anything
// fusible, reductions only as the last op of a group, opaque ops never.
enum class FusibleKind : std::uint8_t { kElementwise = 0, kReduction = 1, kOpaque = 2 };

struct OpTypeInfo {
  std::string_view name;
  FusibleKind kind;
};

const std::vector<OpTypeInfo>& op_types();
int num_op_types();
// Id of a vocabulary name; throws NotFound naming the closest choices otherwise.
int op_type_id(std::string_view name);
const OpTypeInfo& op_type_info(int id);
const char* fusible_kind_name(FusibleKind kind);

}  // namespace goenv
