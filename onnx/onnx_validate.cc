#include "onnx/onnx_validate.h"

#include <climits>
#include <cstdint>
#include <functional>
#include <queue>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "core/graph.h"
#include "core/logging.h"
#include "core/status_macros.h"
#include "core/tensor.h"
#include "core/text.h"
#include "onnx/checker.h"
#include "onnx/defs/schema.h"
#include "onnx/import_util.h"
#include "onnx/newer_opsets.h"

namespace glint::onnx_internal {
namespace {

// The largest DepthToSpace/SpaceToDepth block: ONNX 1.12 squares it in int
// arithmetic, and no real model comes near it.
constexpr int64_t kMaxBlockSize = 1 << 15;

// Ops whose ONNX 1.12 inference Glint guards against crashing only in the
// model's graph (inference_fixes.h runs there): refused inside subgraphs.
bool UnguardedInSubgraphs(const std::string& op) {
  return op == "ConvTranspose" || op == "LayerNormalization";
}

absl::Status CheckAttributeKinds(const onnx::NodeProto& node) {
  absl::flat_hash_set<std::string> seen;
  for (const onnx::AttributeProto& attr : node.attribute()) {
    if (!seen.insert(attr.name()).second) {
      return absl::InvalidArgumentError(absl::StrCat(
          DescribeNode(node), " has attribute '", attr.name(), "' twice"));
    }
    if (!attr.ref_attr_name().empty()) {
      return absl::UnimplementedError(absl::StrCat(
          DescribeNode(node), ": attribute '", attr.name(),
          "' refers to a function attribute ('", attr.ref_attr_name(),
          "'), which Glint does not support"));
    }
    switch (attr.type()) {
      case onnx::AttributeProto::GRAPH:
        break;  // If, Loop, Scan: checked where the subgraph is walked.
      case onnx::AttributeProto::GRAPHS:
        return absl::UnimplementedError(absl::StrCat(
            DescribeNode(node), " has attribute '", attr.name(),
            "' holding a list of graphs, which Glint does not support (no "
            "ONNX op takes one)"));
      case onnx::AttributeProto::SPARSE_TENSOR:
      case onnx::AttributeProto::SPARSE_TENSORS:
        return absl::UnimplementedError(
            absl::StrCat(DescribeNode(node), " has sparse-tensor attribute '",
                         attr.name(), "', which Glint does not support"));
      case onnx::AttributeProto::TENSORS:
      case onnx::AttributeProto::TYPE_PROTO:
      case onnx::AttributeProto::TYPE_PROTOS:
        return absl::UnimplementedError(absl::StrCat(
            DescribeNode(node), " has attribute '", attr.name(), "' of type ",
            onnx::AttributeProto_AttributeType_Name(attr.type()),
            ", which Glint does not support"));
      case onnx::AttributeProto::UNDEFINED:
        return absl::InvalidArgumentError(absl::StrCat(
            DescribeNode(node), ": attribute '", attr.name(), "' has no type"));
      default:
        break;
    }
  }
  return absl::OkStatus();
}

absl::Status CheckDomains(const onnx::GraphProto& graph) {
  for (const onnx::NodeProto& node : graph.node()) {
    if (!node.domain().empty()) {
      return absl::UnimplementedError(
          absl::StrCat("op '", node.op_type(), "' of domain '", node.domain(),
                       "' (node '", node.name(),
                       "') is not supported: Glint runs only ops of the "
                       "default ONNX domain"));
    }
    for (const onnx::AttributeProto& attr : node.attribute()) {
      if (attr.has_g()) GLINT_RETURN_IF_ERROR(CheckDomains(attr.g()));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckOpset(int64_t opset) {
  if (opset <= 0 || opset > INT_MAX) {
    return absl::InvalidArgumentError(
        "the model imports no valid opset of the default ONNX domain");
  }
  if (opset < 7 || opset > kNewestSupportedOpset) {
    GLINT_LOG_WARN("ONNX import: opset {} is outside the tested range 7..{}",
                   opset, kNewestSupportedOpset);
  }
  return absl::OkStatus();
}

absl::Status CheckNodesRunnable(const onnx::GraphProto& graph, int64_t opset,
                                const ImportOptions& options, int depth) {
  for (const onnx::NodeProto& node : graph.node()) {
    if (depth > 0 && UnguardedInSubgraphs(node.op_type())) {
      return absl::UnimplementedError(absl::StrCat(
          DescribeNode(node), " is inside a subgraph, where Glint does not "
          "support op '", node.op_type(), "'"));
    }
    if (options.is_supported &&
        !options.is_supported(absl::string_view(node.op_type()))) {
      return absl::UnimplementedError(
          absl::StrCat("op '", node.op_type(), "' (node '", node.name(),
                       "') is not supported by any device"));
    }
    if (onnx::OpSchemaRegistry::Schema(node.op_type(), static_cast<int>(opset),
                                       "") == nullptr) {
      return absl::UnimplementedError(
          absl::StrCat("op '", node.op_type(), "' (node '", node.name(),
                       "') is not an ONNX op at opset ", opset));
    }
    GLINT_RETURN_IF_ERROR(CheckAttributeKinds(node));
    for (const onnx::AttributeProto& attr : node.attribute()) {
      if (attr.type() != onnx::AttributeProto::GRAPH) continue;
      if (depth + 1 > kMaxSubgraphDepth) {
        return absl::InvalidArgumentError(absl::StrCat(
            "subgraph '", attr.name(), "' of ", DescribeNode(node),
            " nests deeper than ", kMaxSubgraphDepth, " levels"));
      }
      GLINT_RETURN_IF_ERROR(
          CheckNodesRunnable(attr.g(), opset, options, depth + 1));
    }
  }
  return absl::OkStatus();
}

// The node producing each value. INVALID_ARGUMENT for a value produced
// twice, or produced by a node and also a graph input or initializer.
absl::StatusOr<absl::flat_hash_map<std::string, int>> IndexProducers(
    const onnx::GraphProto& graph,
    const absl::flat_hash_set<std::string>& graph_values) {
  absl::flat_hash_map<std::string, int> producer;
  for (int i = 0; i < graph.node_size(); ++i) {
    for (const std::string& out : graph.node(i).output()) {
      if (out.empty()) continue;
      if (graph_values.contains(out)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "value '", out, "' produced by ", DescribeNode(graph.node(i)),
            " is also a graph input or initializer"));
      }
      auto [it, inserted] = producer.emplace(out, i);
      if (!inserted) {
        return absl::InvalidArgumentError(
            absl::StrCat("value '", out, "' is produced by both ",
                         DescribeNode(graph.node(it->second)), " and ",
                         DescribeNode(graph.node(i))));
      }
    }
  }
  return producer;
}

// Node indices in topological order (Kahn's algorithm, always taking the
// earliest ready node so that an already sorted model keeps its order).
// INVALID_ARGUMENT for a value nothing provides or a cycle.
absl::StatusOr<std::vector<int>> TopologicalOrder(
    const onnx::GraphProto& graph,
    const absl::flat_hash_set<std::string>& graph_values,
    const absl::flat_hash_map<std::string, int>& producer) {
  const int n = graph.node_size();
  std::vector<std::vector<int>> consumers(n);
  std::vector<int> pending(n, 0);
  for (int i = 0; i < n; ++i) {
    for (const std::string& in : graph.node(i).input()) {
      if (in.empty() || graph_values.contains(in)) continue;
      auto it = producer.find(in);
      if (it == producer.end()) {
        return absl::InvalidArgumentError(
            absl::StrCat(DescribeNode(graph.node(i)), " consumes '", in,
                         "', which no node, input or initializer provides"));
      }
      consumers[it->second].push_back(i);
      ++pending[i];
    }
  }
  std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
  for (int i = 0; i < n; ++i) {
    if (pending[i] == 0) ready.push(i);
  }
  std::vector<int> order;
  order.reserve(n);
  while (!ready.empty()) {
    const int i = ready.top();
    ready.pop();
    order.push_back(i);
    for (int c : consumers[i]) {
      if (--pending[c] == 0) ready.push(c);
    }
  }
  for (int i = 0; i < n; ++i) {
    if (pending[i] > 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the graph has a cycle through ", DescribeNode(graph.node(i))));
    }
  }
  return order;
}

// Checks one attribute's value (see CheckAttributeValues).
absl::Status CheckAttributeValue(const onnx::NodeProto& node,
                                 const onnx::AttributeProto& attr) {
  const std::string& name = attr.name();
  auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat(DescribeNode(node), ": attribute '", name, "' ", why));
  };
  if (name == "strides" || name == "dilations" || name == "kernel_shape") {
    for (int64_t v : attr.ints()) {
      if (v < 1 || v > INT32_MAX) {
        return bad(absl::StrCat("holds ", v, "; each must be in [1, ",
                                INT32_MAX, "]"));
      }
    }
  } else if (name == "pads" || name == "output_padding") {
    for (int64_t v : attr.ints()) {
      if (v < 0 || v > INT32_MAX) {
        return bad(absl::StrCat("holds ", v, "; each must be in [0, ",
                                INT32_MAX, "]"));
      }
    }
  } else if (name == "group" && attr.has_i() &&
             (attr.i() < 1 || attr.i() > INT32_MAX)) {
    return bad(absl::StrCat("is ", attr.i(), "; it must be positive"));
  } else if (name == "blocksize" &&
             (attr.i() < 1 || attr.i() > kMaxBlockSize)) {
    return bad(absl::StrCat("is ", attr.i(), "; it must be in [1, ",
                            kMaxBlockSize, "]"));
  } else if (name == "batch_dims" &&
             (attr.i() < 0 || attr.i() > kMaxTensorRank)) {
    return bad(absl::StrCat("is ", attr.i(), "; it must be in [0, ",
                            kMaxTensorRank, "]"));
  } else if (node.op_type() == "Scan" && name == "num_scan_inputs" &&
             (attr.i() < 1 || attr.i() > node.input_size())) {
    return bad(absl::StrCat("is ", attr.i(), "; it must be in [1, ",
                            node.input_size(), "] (the node's inputs)"));
  } else if (node.op_type() == "Scan" &&
             (name == "scan_input_axes" || name == "scan_output_axes")) {
    for (int64_t v : attr.ints()) {
      if (v < -kMaxTensorRank || v >= kMaxTensorRank) {
        return bad(absl::StrCat("holds ", v, "; each must be in [",
                                -kMaxTensorRank, ", ", kMaxTensorRank, ")"));
      }
    }
  }
  return absl::OkStatus();
}

// Declared lengths of 1-D graph inputs and initializers, by name.
absl::flat_hash_map<std::string, int64_t> DeclaredLengths(
    const onnx::GraphProto& graph) {
  absl::flat_hash_map<std::string, int64_t> length;
  for (const auto& init : graph.initializer()) {
    if (init.dims_size() == 1) length[init.name()] = init.dims(0);
  }
  for (const auto& in : graph.input()) {
    const auto& t = in.type().tensor_type();
    if (t.has_shape() && t.shape().dim_size() == 1 &&
        t.shape().dim(0).has_dim_value()) {
      length[in.name()] = t.shape().dim(0).dim_value();
    }
  }
  return length;
}

// Refuses an operand that gives an output's rank by its length (the shape
// of ConstantOfShape, Expand, Reshape, Tile) when that length, known from
// `length`, is over kMaxTensorRank.
absl::Status CheckShapeOperand(
    const onnx::NodeProto& node,
    const absl::flat_hash_map<std::string, int64_t>& length) {
  int shape_operand = -1;
  if (node.op_type() == "ConstantOfShape") shape_operand = 0;
  if (node.op_type() == "Expand" || node.op_type() == "Reshape" ||
      node.op_type() == "Tile") {
    shape_operand = 1;
  }
  if (shape_operand < 0 || node.input_size() <= shape_operand) {
    return absl::OkStatus();
  }
  auto it = length.find(node.input(shape_operand));
  if (it != length.end() && it->second > kMaxTensorRank) {
    return absl::InvalidArgumentError(absl::StrCat(
        DescribeNode(node), ": operand '", node.input(shape_operand), "' has ",
        it->second, " elements, over Glint's rank limit of ", kMaxTensorRank));
  }
  return absl::OkStatus();
}

void NormalizeNodeDomains(onnx::GraphProto* graph) {
  for (onnx::NodeProto& node : *graph->mutable_node()) {
    if (IsDefaultDomain(node.domain())) node.set_domain("");
    for (onnx::AttributeProto& attr : *node.mutable_attribute()) {
      if (attr.has_g()) NormalizeNodeDomains(attr.mutable_g());
    }
  }
}

}  // namespace

absl::StatusOr<int64_t> NormalizeDefaultDomain(onnx::ModelProto* model) {
  int64_t opset = 0;
  for (onnx::OperatorSetIdProto& imp : *model->mutable_opset_import()) {
    if (!IsDefaultDomain(imp.domain())) continue;
    if (opset != 0 && opset != imp.version()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the model imports the default ONNX domain twice, at opsets ", opset,
          " and ", imp.version()));
    }
    imp.set_domain("");
    opset = imp.version();
  }
  NormalizeNodeDomains(model->mutable_graph());
  return opset;
}

absl::Status CheckNamesAreUtf8(const onnx::GraphProto& graph) {
  auto check = [](const std::string& name, absl::string_view what) {
    if (IsValidUtf8(name)) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrCat(
        what, " name '", Clip(absl::CHexEscape(name)), "' is not UTF-8"));
  };
  GLINT_RETURN_IF_ERROR(check(graph.name(), "the graph's"));
  for (const auto& v : graph.input())
    GLINT_RETURN_IF_ERROR(check(v.name(), "an input's"));
  for (const auto& v : graph.output())
    GLINT_RETURN_IF_ERROR(check(v.name(), "an output's"));
  for (const auto& v : graph.value_info())
    GLINT_RETURN_IF_ERROR(check(v.name(), "a value's"));
  for (const auto& t : graph.initializer())
    GLINT_RETURN_IF_ERROR(check(t.name(), "an initializer's"));
  for (const onnx::NodeProto& node : graph.node()) {
    GLINT_RETURN_IF_ERROR(check(node.name(), "a node's"));
    GLINT_RETURN_IF_ERROR(check(node.op_type(), "an op type's"));
    GLINT_RETURN_IF_ERROR(check(node.domain(), "a domain's"));
    for (const std::string& v : node.input())
      GLINT_RETURN_IF_ERROR(check(v, "a value's"));
    for (const std::string& v : node.output())
      GLINT_RETURN_IF_ERROR(check(v, "a value's"));
    for (const auto& a : node.attribute()) {
      GLINT_RETURN_IF_ERROR(check(a.name(), "an attribute's"));
      if (a.has_g()) GLINT_RETURN_IF_ERROR(CheckNamesAreUtf8(a.g()));
    }
  }
  return absl::OkStatus();
}

void AssignNodeNames(onnx::GraphProto* graph) {
  absl::flat_hash_set<std::string> taken;
  std::vector<int> unnamed;
  for (int i = 0; i < graph->node_size(); ++i) {
    const std::string& name = graph->node(i).name();
    if (name.empty() || !taken.insert(name).second) unnamed.push_back(i);
  }
  for (int i : unnamed) {
    onnx::NodeProto* node = graph->mutable_node(i);
    std::string base = absl::StrCat(node->op_type(), "_", i);
    std::string name = base;
    for (int k = 1; taken.contains(name); ++k)
      name = absl::StrCat(base, "_", k);
    taken.insert(name);
    node->set_name(std::move(name));
  }
  for (onnx::NodeProto& node : *graph->mutable_node()) {
    for (onnx::AttributeProto& attr : *node.mutable_attribute()) {
      if (attr.has_g()) AssignNodeNames(attr.mutable_g());
    }
  }
}

absl::Status CheckModelIsRunnable(const onnx::GraphProto& graph, int64_t opset,
                                  const ImportOptions& options) {
  // Domains before the opset: a model made only of another domain's ops
  // (training ops, contrib ops) is told so rather than "no opset".
  GLINT_RETURN_IF_ERROR(CheckDomains(graph));
  GLINT_RETURN_IF_ERROR(CheckOpset(opset));
  GLINT_RETURN_IF_ERROR(CheckNodesRunnable(graph, opset, options, 0));
  if (graph.sparse_initializer_size() > 0) {
    return absl::UnimplementedError(absl::StrCat(
        "initializer '", graph.sparse_initializer(0).values().name(),
        "' is sparse, which Glint does not support"));
  }
  return absl::OkStatus();
}

absl::Status SortNodes(onnx::GraphProto* graph) {
  absl::flat_hash_set<std::string> graph_values;
  for (const auto& in : graph->input()) graph_values.insert(in.name());
  for (const auto& init : graph->initializer())
    graph_values.insert(init.name());
  GLINT_ASSIGN_OR_RETURN(const auto producer,
                         IndexProducers(*graph, graph_values));
  GLINT_ASSIGN_OR_RETURN(const std::vector<int> order,
                         TopologicalOrder(*graph, graph_values, producer));
  const int n = graph->node_size();
  bool sorted = true;
  for (int i = 0; i < n; ++i) sorted = sorted && order[i] == i;
  if (sorted) return absl::OkStatus();
  GLINT_LOG_DEBUG(
      "ONNX import: nodes of graph '{}' were not topologically "
      "sorted; reordered them",
      graph->name());
  std::vector<onnx::NodeProto> nodes;
  nodes.reserve(n);
  for (int i = 0; i < n; ++i)
    nodes.push_back(std::move(*graph->mutable_node(i)));
  graph->clear_node();
  for (int i : order) *graph->add_node() = std::move(nodes[i]);
  return absl::OkStatus();
}

absl::Status CheckAttributeValues(const onnx::GraphProto& graph) {
  const auto length = DeclaredLengths(graph);
  for (const onnx::NodeProto& node : graph.node()) {
    for (const onnx::AttributeProto& attr : node.attribute()) {
      GLINT_RETURN_IF_ERROR(CheckAttributeValue(node, attr));
      if (attr.has_g()) GLINT_RETURN_IF_ERROR(CheckAttributeValues(attr.g()));
    }
    GLINT_RETURN_IF_ERROR(CheckShapeOperand(node, length));
  }
  return absl::OkStatus();
}

absl::Status CheckNodes(const onnx::ModelProto& model) {
  // check_graph is not used because it insists on a shape for every graph
  // output, which exporters often omit and inference fills.
  std::unordered_map<std::string, int> opsets;
  for (const auto& imp : model.opset_import()) {
    opsets[imp.domain()] = static_cast<int>(imp.version());
  }
  onnx::checker::CheckerContext ctx;
  const int64_t ir = model.ir_version();
  ctx.set_ir_version(ir >= 1 && ir <= onnx::IR_VERSION
                         ? static_cast<int>(ir)
                         : static_cast<int>(onnx::IR_VERSION));
  ctx.set_opset_imports(opsets);
  onnx::checker::LexicalScopeContext lex;
  const onnx::GraphProto& graph = model.graph();
  for (const auto& in : graph.input()) lex.add(in.name());
  for (const auto& init : graph.initializer()) lex.add(init.name());
  for (const onnx::NodeProto& node : graph.node()) {
    try {
      onnx::checker::check_node(node, ctx, lex);
    } catch (...) {
      return StatusFromException(
          absl::StrCat("ONNX check of ", DescribeNode(node), " failed"));
    }
    for (const std::string& out : node.output()) lex.add(out);
  }
  return absl::OkStatus();
}

}  // namespace glint::onnx_internal
