#include "onnx/onnx_importer.h"

#include <climits>
#include <cstdint>
#include <cstring>
#include <exception>
#include <functional>
#include <limits>
#include <new>
#include <queue>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "onnx/checker.h"
#include "onnx/defs/schema.h"
#include "onnx/defs/shape_inference.h"
#include "onnx/onnx_pb.h"
#include "onnx/shape_inference/implementation.h"
#include "core/logging.h"
#include "onnx/onnx_tensor.h"
#include "core/status_macros.h"
#include "core/text.h"

namespace glint {
namespace {

// The largest DepthToSpace/SpaceToDepth block: ONNX 1.12 squares it in int
// arithmetic, and no real model comes near it.
constexpr int64_t kMaxBlockSize = 1 << 15;
// Initializers up to this size travel to the inference helper with their
// data (shape-like values that inference reads); larger ones go as typed
// inputs, so a 100 MB model is not copied to the helper.
constexpr size_t kInlineInitializerBytes = 1 << 20;

// ---------------------------------------------------------------------------
// Model import
// ---------------------------------------------------------------------------

bool IsDefaultDomain(const std::string& domain) {
  return domain.empty() || domain == "ai.onnx";
}

std::string DescribeNode(const onnx::NodeProto& node) {
  return absl::StrCat("node '", node.name(), "' (", node.op_type(), ")");
}

// Turns whatever ONNX threw into a status; the message keeps ONNX's own
// words since they name the offending node and value.
absl::Status StatusFromException(absl::string_view stage) {
  try {
    throw;
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError(absl::StrCat(stage, ": out of memory"));
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(stage, ": ", e.what()));
  } catch (...) {
    return absl::InvalidArgumentError(
        absl::StrCat(stage, ": unknown exception"));
  }
}

// Gives every node a unique name: the model's where it has one, the first
// holder of a duplicated name keeps it, and the others get "<op_type>_<i>"
// (i = position in the model), made unique if the model already uses it.
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
}

// Names travel back to clients in protobuf strings (ListNetworks, DOT),
// which must be UTF-8: a model naming a value in other bytes would make
// every later listing fail. Refused here, at the edge.
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
    for (const auto& a : node.attribute())
      GLINT_RETURN_IF_ERROR(check(a.name(), "an attribute's"));
  }
  return absl::OkStatus();
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
      case onnx::AttributeProto::GRAPHS:
        return absl::UnimplementedError(absl::StrCat(
            DescribeNode(node), " has graph-valued attribute '", attr.name(),
            "'; control flow with sub-graphs (If, Loop, Scan) is not "
            "supported"));
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
  }
  return absl::OkStatus();
}

// Refuses, before any inference, what Glint cannot run, so that the caller
// sees the real reason rather than a consequence of it.
absl::Status CheckNodesRunnable(const onnx::GraphProto& graph, int64_t opset,
                                const ImportOptions& options) {
  for (const onnx::NodeProto& node : graph.node()) {
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
  }
  return absl::OkStatus();
}

// Binds the dims of one runtime input and writes them back into the proto,
// so that shape inference propagates concrete sizes.
absl::StatusOr<Shape> BindInputShape(const std::string& name,
                                     onnx::TypeProto_Tensor* type,
                                     const ImportOptions& options) {
  auto it = options.input_shapes.find(name);
  std::vector<int64_t> dims;
  if (it != options.input_shapes.end()) {
    const Shape& given = it->second;
    for (int64_t d : given.dims()) {
      if (d < 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("the shape given for input '", name, "' (",
                         given.ToString(), ") is not fully static"));
      }
    }
    if (type->has_shape()) {
      const onnx::TensorShapeProto& declared = type->shape();
      bool compatible = declared.dim_size() == given.rank();
      for (int i = 0; compatible && i < declared.dim_size(); ++i) {
        if (declared.dim(i).has_dim_value() &&
            declared.dim(i).dim_value() != given.dim(i)) {
          compatible = false;
        }
      }
      if (!compatible) {
        std::vector<std::string> shown;
        for (const auto& d : declared.dim()) {
          shown.push_back(d.has_dim_value()   ? absl::StrCat(d.dim_value())
                          : d.has_dim_param() ? d.dim_param()
                                              : std::string("?"));
        }
        return absl::InvalidArgumentError(absl::StrCat(
            "the shape given for input '", name, "' (", given.ToString(),
            ") does not match its declared shape [", absl::StrJoin(shown, ", "),
            "]"));
      }
    }
    dims = given.dims();
  } else {
    if (!type->has_shape()) {
      return absl::InvalidArgumentError(
          absl::StrCat("input '", name,
                       "' declares no shape (its rank is unknown); give "
                       "its shape in ImportOptions::input_shapes"));
    }
    for (const auto& d : type->shape().dim()) {
      if (d.has_dim_value()) {
        if (d.dim_value() < 0) {
          return absl::InvalidArgumentError(
              absl::StrCat("input '", name, "' declares negative dimension ",
                           d.dim_value()));
        }
        dims.push_back(d.dim_value());
      } else {
        // Symbolic or unknown: a batch of one is the common default, and
        // the caller can override it through input_shapes.
        dims.push_back(1);
      }
    }
  }
  onnx::TensorShapeProto* shape = type->mutable_shape();
  shape->clear_dim();
  for (int64_t d : dims) shape->add_dim()->set_dim_value(d);
  return Shape(std::move(dims));
}

// Reorders the nodes topologically (Kahn's algorithm, always taking the
// earliest ready node so that an already sorted model keeps its order).
absl::Status SortNodes(onnx::GraphProto* graph,
                       const absl::flat_hash_set<std::string>& graph_values) {
  const int n = graph->node_size();
  absl::flat_hash_map<std::string, int> producer;
  for (int i = 0; i < n; ++i) {
    for (const std::string& out : graph->node(i).output()) {
      if (out.empty()) continue;
      if (graph_values.contains(out)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "value '", out, "' produced by ", DescribeNode(graph->node(i)),
            " is also a graph input or initializer"));
      }
      auto [it, inserted] = producer.emplace(out, i);
      if (!inserted) {
        return absl::InvalidArgumentError(
            absl::StrCat("value '", out, "' is produced by both ",
                         DescribeNode(graph->node(it->second)), " and ",
                         DescribeNode(graph->node(i))));
      }
    }
  }
  std::vector<std::vector<int>> consumers(n);
  std::vector<int> pending(n, 0);
  for (int i = 0; i < n; ++i) {
    for (const std::string& in : graph->node(i).input()) {
      if (in.empty() || graph_values.contains(in)) continue;
      auto it = producer.find(in);
      if (it == producer.end()) {
        return absl::InvalidArgumentError(
            absl::StrCat(DescribeNode(graph->node(i)), " consumes '", in,
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
  if (static_cast<int>(order.size()) != n) {
    for (int i = 0; i < n; ++i) {
      if (pending[i] > 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            "the graph has a cycle through ", DescribeNode(graph->node(i))));
      }
    }
  }
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

// ONNX's per-node checks (arity, required attributes and their types,
// deprecated ops). check_graph is not used because it insists on a shape
// for every graph output, which exporters often omit and inference fills.
absl::Status CheckNodes(const onnx::ModelProto& model,
                        const std::unordered_map<std::string, int>& opsets) {
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

absl::Status RunShapeInference(onnx::ModelProto* model) {
  // check_type and error_mode 1: a model whose declared types contradict
  // what its ops compute is malformed, and must fail here rather than at
  // run time. Data propagation resolves shapes computed by Shape/Gather/
  // Concat chains, common in exported models.
  onnx::ShapeInferenceOptions options(/*check_type_val=*/true,
                                      /*strict_mode_val=*/1,
                                      /*data_prop_val=*/true);
  std::unordered_map<std::string, onnx::TensorShapeProto> generated;
  try {
    onnx::shape_inference::InferShapes(
        *model, onnx::OpSchemaRegistry::Instance(), options, &generated);
  } catch (...) {
    return StatusFromException("ONNX shape inference failed");
  }
  return absl::OkStatus();
}

// Index of every declared type in the graph, by value name.
absl::flat_hash_map<std::string, const onnx::TypeProto*> IndexTypes(
    const onnx::GraphProto& graph) {
  absl::flat_hash_map<std::string, const onnx::TypeProto*> types;
  for (const auto& vi : graph.value_info()) types[vi.name()] = &vi.type();
  for (const auto& vi : graph.output()) types[vi.name()] = &vi.type();
  for (const auto& vi : graph.input()) types[vi.name()] = &vi.type();
  return types;
}

onnx::TypeProto* FindMutableType(onnx::GraphProto* graph,
                                 const std::string& name);

// ONNX 1.12's ConvTranspose inference indexes W's dims by X's spatial rank
// without checking W's rank, and reads out of bounds (crashing the
// process) when W has fewer dims than X. The ranks are found first on a
// probe where every ConvTranspose is an Identity of X (declared shapes
// dropped so that the stand-in contradicts nothing), and offending nodes are
// refused before the real inference runs.
absl::Status CheckConvTransposeRanks(const onnx::ModelProto& model) {
  bool any = false;
  for (const onnx::NodeProto& node : model.graph().node()) {
    any = any || node.op_type() == "ConvTranspose";
  }
  if (!any) return absl::OkStatus();
  onnx::ModelProto probe = model;
  onnx::GraphProto* graph = probe.mutable_graph();
  graph->clear_value_info();
  for (auto& out : *graph->mutable_output()) {
    out.mutable_type()->mutable_tensor_type()->clear_shape();
  }
  for (onnx::NodeProto& node : *graph->mutable_node()) {
    if (node.op_type() != "ConvTranspose" || node.input_size() < 1) continue;
    node.set_op_type("Identity");
    node.clear_attribute();
    const std::string x = node.input(0);
    node.clear_input();
    node.add_input(x);
    while (node.output_size() > 1) node.mutable_output()->RemoveLast();
  }
  // A probe that fails tells nothing; the real inference reports the error.
  if (!RunShapeInference(&probe).ok()) return absl::OkStatus();
  const auto types = IndexTypes(probe.graph());
  absl::flat_hash_map<std::string, int> init_rank;
  for (const auto& init : model.graph().initializer()) {
    init_rank[init.name()] = init.dims_size();
  }
  auto rank_of = [&](const std::string& value) -> int {
    auto it = init_rank.find(value);
    if (it != init_rank.end()) return it->second;
    auto t = types.find(value);
    if (t == types.end() || !t->second->has_tensor_type() ||
        !t->second->tensor_type().has_shape()) {
      return -1;
    }
    return t->second->tensor_type().shape().dim_size();
  };
  for (const onnx::NodeProto& node : model.graph().node()) {
    if (node.op_type() != "ConvTranspose" || node.input_size() < 2) continue;
    const int x = rank_of(node.input(0));
    const int w = rank_of(node.input(1));
    if ((x >= 0 && x < 3) || (x >= 0 && w >= 0 && w < x)) {
      return absl::InvalidArgumentError(absl::StrCat(
          DescribeNode(node), ": X has rank ", x, " and W rank ", w,
          "; ConvTranspose needs rank >= 3 and W of X's rank"));
    }
  }
  return absl::OkStatus();
}

// ONNX 1.12's LayerNormalization inference fills its Mean output's shape
// from static_cast<int>(axis), normalised by the input's rank, with no range
// check: a negative result indexes out of bounds and crashes the process.
// Axes that no rank can make valid are refused outright. A negative axis
// depends on the rank, known only after inference, so a copy whose such
// axes are 0 (safe at any rank) is inferred first and the real axes checked
// against the ranks found. Only nodes with a Mean output need it, which are
// rare outside training graphs, so the copy is rarely paid for. Valid
// negative axes are then rewritten as their positive equivalents for
// inference (1.12 also gives the Mean output a wrong shape for them, which
// fails it); `restore` gets (node index, model's axis) to put back after.
absl::Status NormalizeLayerNormAxes(
    onnx::ModelProto* mutable_model,
    std::vector<std::pair<int, int64_t>>* restore) {
  const onnx::ModelProto& model = *mutable_model;
  std::vector<std::pair<int, int64_t>> negative;  // Node index, axis.
  for (int i = 0; i < model.graph().node_size(); ++i) {
    const onnx::NodeProto& node = model.graph().node(i);
    if (node.op_type() != "LayerNormalization") continue;
    int64_t axis = -1;
    for (const onnx::AttributeProto& attr : node.attribute()) {
      if (attr.name() == "axis") axis = attr.i();
    }
    if (axis > INT_MAX || axis < INT_MIN) {
      return absl::InvalidArgumentError(absl::StrCat(
          DescribeNode(node), ": axis ", axis, " is out of range"));
    }
    if (axis < 0 && node.output_size() >= 2) negative.emplace_back(i, axis);
  }
  if (negative.empty()) return absl::OkStatus();
  onnx::ModelProto probe = model;
  for (const auto& [i, axis] : negative) {
    onnx::NodeProto* node = probe.mutable_graph()->mutable_node(i);
    onnx::AttributeProto* attr = nullptr;
    for (onnx::AttributeProto& a : *node->mutable_attribute()) {
      if (a.name() == "axis") attr = &a;
    }
    if (attr == nullptr) {
      attr = node->add_attribute();
      attr->set_name("axis");
      attr->set_type(onnx::AttributeProto::INT);
    }
    attr->set_i(0);
    // Axis 0 changes the statistics' shapes: drop what the model declares
    // for them so the probe's inference does not see a contradiction.
    for (int o = 1; o < node->output_size(); ++o) {
      if (onnx::TypeProto* t = FindMutableType(probe.mutable_graph(),
                                               node->output(o))) {
        t->mutable_tensor_type()->clear_shape();
      }
    }
  }
  GLINT_RETURN_IF_ERROR(RunShapeInference(&probe));
  const auto types = IndexTypes(probe.graph());
  for (const auto& [i, axis] : negative) {
    const onnx::NodeProto& node = model.graph().node(i);
    if (node.input_size() < 1) continue;
    auto it = types.find(node.input(0));
    if (it == types.end() || !it->second->has_tensor_type() ||
        !it->second->tensor_type().has_shape()) {
      continue;  // Rank unknown: inference does not index the shape.
    }
    const int64_t rank = it->second->tensor_type().shape().dim_size();
    if (axis < -rank) {
      return absl::InvalidArgumentError(
          absl::StrCat(DescribeNode(node), ": axis ", axis,
                       " is out of range for an input of rank ", rank));
    }
    onnx::NodeProto* target = mutable_model->mutable_graph()->mutable_node(i);
    onnx::AttributeProto* attr = nullptr;
    for (onnx::AttributeProto& a : *target->mutable_attribute()) {
      if (a.name() == "axis") attr = &a;
    }
    if (attr == nullptr) {
      attr = target->add_attribute();
      attr->set_name("axis");
      attr->set_type(onnx::AttributeProto::INT);
    }
    attr->set_i(axis + rank);
    restore->emplace_back(i, axis);
  }
  return absl::OkStatus();
}

onnx::TypeProto* FindMutableType(onnx::GraphProto* graph,
                                 const std::string& name) {
  for (auto& vi : *graph->mutable_value_info()) {
    if (vi.name() == name) return vi.mutable_type();
  }
  for (auto& vi : *graph->mutable_output()) {
    if (vi.name() == name) return vi.mutable_type();
  }
  return nullptr;
}

// ONNX 1.12 leaves the output of Reshape and ConstantOfShape rankless when
// the target shape is a run-time value, although the static length of that
// 1-D input is the output's rank (newer ONNX releases infer it). Giving
// those outputs their rank lets the next inference pass give every
// downstream value a rank too. Returns whether anything changed;
// INVALID_ARGUMENT for a rank over kMaxTensorRank (a hostile model
// declares its shape operand with billions of elements to make this
// allocate billions of dims).
absl::StatusOr<bool> RecoverRanks(onnx::GraphProto* graph) {
  const auto types = IndexTypes(*graph);
  struct Patch {
    std::string value;
    int64_t rank;
  };
  std::vector<Patch> patches;
  for (const onnx::NodeProto& node : graph->node()) {
    int shape_input;
    if (node.op_type() == "Reshape") {
      shape_input = 1;
    } else if (node.op_type() == "ConstantOfShape") {
      shape_input = 0;
    } else {
      continue;
    }
    if (node.input_size() <= shape_input || node.output_size() < 1) continue;
    auto out = types.find(node.output(0));
    if (out != types.end() && out->second->has_tensor_type() &&
        out->second->tensor_type().has_shape()) {
      continue;
    }
    auto in = types.find(node.input(shape_input));
    if (in == types.end() || !in->second->has_tensor_type()) continue;
    const onnx::TypeProto_Tensor& t = in->second->tensor_type();
    if (!t.has_shape() || t.shape().dim_size() != 1 ||
        !t.shape().dim(0).has_dim_value()) {
      continue;
    }
    const int64_t rank = t.shape().dim(0).dim_value();
    if (rank > kMaxTensorRank) {
      return absl::InvalidArgumentError(absl::StrCat(
          DescribeNode(node), ": its shape operand has ", rank,
          " elements, over Glint's rank limit of ", kMaxTensorRank));
    }
    patches.push_back({node.output(0), rank});
  }
  bool changed = false;
  for (const Patch& p : patches) {
    onnx::TypeProto* type = FindMutableType(graph, p.value);
    if (type == nullptr) {
      onnx::ValueInfoProto* vi = graph->add_value_info();
      vi->set_name(p.value);
      type = vi->mutable_type();
    }
    onnx::TensorShapeProto* shape =
        type->mutable_tensor_type()->mutable_shape();
    for (int64_t i = 0; i < p.rank; ++i) shape->add_dim();
    changed = true;
  }
  return changed;
}

// The type of a node's output after inference. Unknown rank is kept as an
// empty Shape and reported through `unknown_rank`: the runtime computes
// shapes as it goes, so such a value is importable, but passes should not
// take its Shape for a scalar's.
absl::StatusOr<ValueInfo> NodeOutputInfo(
    const std::string& value, const onnx::NodeProto& node,
    const absl::flat_hash_map<std::string, const onnx::TypeProto*>& types,
    std::vector<std::string>* unknown_rank) {
  auto it = types.find(value);
  const onnx::TypeProto* type = it == types.end() ? nullptr : it->second;
  if (type != nullptr && type->value_case() != onnx::TypeProto::kTensorType &&
      type->value_case() != onnx::TypeProto::VALUE_NOT_SET) {
    return absl::UnimplementedError(absl::StrCat(
        "value '", value, "' produced by ", DescribeNode(node),
        " is not a tensor (sequences, maps and optionals are not supported)"));
  }
  if (type == nullptr || !type->has_tensor_type() ||
      type->tensor_type().elem_type() == onnx::TensorProto::UNDEFINED) {
    return absl::UnimplementedError(
        absl::StrCat("cannot infer the type of value '", value,
                     "' produced by ", DescribeNode(node)));
  }
  const onnx::TypeProto_Tensor& t = type->tensor_type();
  ValueInfo info;
  info.name = value;
  absl::StatusOr<DType> dtype = DTypeFromOnnx(t.elem_type());
  if (!dtype.ok()) {
    return absl::UnimplementedError(
        absl::StrCat("value '", value, "' produced by ", DescribeNode(node),
                     " has element type ", OnnxTypeName(t.elem_type()),
                     ", which Glint does not support"));
  }
  info.dtype = *dtype;
  if (t.has_shape()) {
    for (const auto& d : t.shape().dim()) {
      info.shape.mutable_dims().push_back(
          d.has_dim_value() && d.dim_value() >= 0 ? d.dim_value()
                                                  : Shape::kUnknownDim);
    }
  } else {
    unknown_rank->push_back(value);
  }
  return info;
}

// Attribute values that ONNX 1.12's shape inference divides by, shifts by
// or indexes with unchecked (SIGFPE/SIGSEGV in the process that runs it),
// and that Glint's kernels and cost model would misuse the same way.
// Refused before inference runs.
absl::Status CheckAttributeValues(const onnx::GraphProto& graph) {
  // Declared lengths of 1-D graph inputs and initializers, for the shape
  // operands checked below.
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
  for (const onnx::NodeProto& node : graph.node()) {
    for (const onnx::AttributeProto& attr : node.attribute()) {
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
      }
    }
    // Operands that give an output's rank by their length.
    int shape_operand = -1;
    if (node.op_type() == "ConstantOfShape") shape_operand = 0;
    if (node.op_type() == "Expand" || node.op_type() == "Reshape" ||
        node.op_type() == "Tile") {
      shape_operand = 1;
    }
    if (shape_operand >= 0 && node.input_size() > shape_operand) {
      auto it = length.find(node.input(shape_operand));
      if (it != length.end() && it->second > kMaxTensorRank) {
        return absl::InvalidArgumentError(absl::StrCat(
            DescribeNode(node), ": operand '", node.input(shape_operand),
            "' has ", it->second, " elements, over Glint's rank limit of ",
            kMaxTensorRank));
      }
    }
  }
  return absl::OkStatus();
}

// Runs ONNX's checker and shape inference over `model` (the importer's
// prepared model) and leaves every inferred type in its value_info and
// outputs. This is where untrusted models meet third-party code.
absl::Status InferTypes(onnx::ModelProto* model) {
  std::unordered_map<std::string, int> opsets;
  for (const auto& imp : model->opset_import()) {
    opsets[imp.domain()] = static_cast<int>(imp.version());
  }
  onnx::GraphProto* graph = model->mutable_graph();
  GLINT_RETURN_IF_ERROR(CheckAttributeValues(*graph));
  GLINT_RETURN_IF_ERROR(CheckNodes(*model, opsets));
  std::vector<std::pair<int, int64_t>> layer_norm_axes;
  GLINT_RETURN_IF_ERROR(NormalizeLayerNormAxes(model, &layer_norm_axes));
  GLINT_RETURN_IF_ERROR(CheckConvTransposeRanks(*model));
  GLINT_RETURN_IF_ERROR(RunShapeInference(model));
  // Each round gives a rank to at least one more value, and ranks only flow
  // forward, so a few rounds cover any realistic chain of reshapes.
  for (int round = 0; round < 4; ++round) {
    GLINT_ASSIGN_OR_RETURN(bool changed, RecoverRanks(graph));
    if (!changed) break;
    GLINT_RETURN_IF_ERROR(RunShapeInference(model));
  }
  for (const auto& [i, axis] : layer_norm_axes) {
    for (onnx::AttributeProto& a :
         *graph->mutable_node(i)->mutable_attribute()) {
      if (a.name() == "axis") a.set_i(axis);
    }
  }
  return absl::OkStatus();
}

// InferTypes through `run` (a helper process, typically): sends the model
// (big initializers as bare typed inputs: inference needs the values of
// small shape-like tensors only), and takes back the inferred types.
absl::Status InferTypesElsewhere(onnx::ModelProto* model,
                                 const InferenceRunner& run) {
  onnx::GraphProto* graph = model->mutable_graph();
  absl::flat_hash_set<std::string> inputs;
  for (const auto& in : graph->input()) inputs.insert(in.name());
  google::protobuf::RepeatedPtrField<onnx::TensorProto> kept;
  for (onnx::TensorProto& init : *graph->mutable_initializer()) {
    if (init.ByteSizeLong() <= kInlineInitializerBytes) {
      *kept.Add() = std::move(init);
      continue;
    }
    if (inputs.contains(init.name())) continue;  // Typed by the importer.
    onnx::ValueInfoProto* in = graph->add_input();
    in->set_name(init.name());
    onnx::TypeProto_Tensor* type = in->mutable_type()->mutable_tensor_type();
    type->set_elem_type(init.data_type());
    for (int64_t d : init.dims()) {
      type->mutable_shape()->add_dim()->set_dim_value(d);
    }
  }
  graph->mutable_initializer()->Swap(&kept);
  GLINT_ASSIGN_OR_RETURN(std::string reply, run(model->SerializeAsString()));
  onnx::GraphProto inferred;
  if (!inferred.ParseFromString(reply) ||
      inferred.output_size() != graph->output_size()) {
    return absl::InternalError("the import helper's reply is malformed");
  }
  for (int i = 0; i < graph->output_size(); ++i) {
    if (inferred.output(i).name() != graph->output(i).name()) {
      return absl::InternalError("the import helper's reply is malformed");
    }
  }
  graph->mutable_value_info()->Swap(inferred.mutable_value_info());
  graph->mutable_output()->Swap(inferred.mutable_output());
  return absl::OkStatus();
}

absl::StatusOr<Attribute> ConvertAttribute(const onnx::AttributeProto& attr,
                                           const onnx::NodeProto& node) {
  switch (attr.type()) {
    case onnx::AttributeProto::INT:
      return Attribute(static_cast<int64_t>(attr.i()));
    case onnx::AttributeProto::FLOAT:
      return Attribute(attr.f());
    case onnx::AttributeProto::STRING:
      return Attribute(attr.s());
    case onnx::AttributeProto::INTS:
      return Attribute(
          std::vector<int64_t>(attr.ints().begin(), attr.ints().end()));
    case onnx::AttributeProto::FLOATS:
      return Attribute(
          std::vector<float>(attr.floats().begin(), attr.floats().end()));
    case onnx::AttributeProto::STRINGS:
      return Attribute(std::vector<std::string>(attr.strings().begin(),
                                                attr.strings().end()));
    case onnx::AttributeProto::TENSOR: {
      absl::StatusOr<Tensor> t = TensorFromOnnxProto(attr.t());
      if (!t.ok()) {
        return absl::Status(
            t.status().code(),
            absl::StrCat("attribute '", attr.name(), "' of ",
                         DescribeNode(node), ": ", t.status().message()));
      }
      return Attribute(*std::move(t));
    }
    default:
      // CheckAttributeKinds refused the other kinds already.
      return absl::UnimplementedError(absl::StrCat(
          "attribute '", attr.name(), "' of ", DescribeNode(node), " has type ",
          onnx::AttributeProto_AttributeType_Name(attr.type()),
          ", which Glint does not support"));
  }
}

absl::StatusOr<Graph> Import(absl::string_view model_bytes,
                             const ImportOptions& options) {
  if (model_bytes.size() > static_cast<size_t>(INT_MAX)) {
    return absl::InvalidArgumentError(
        "model bytes exceed 2 GiB, the protobuf limit; models that large "
        "need external data, which Glint does not support");
  }
  onnx::ModelProto model;
  if (model_bytes.empty() ||
      !model.ParseFromArray(model_bytes.data(),
                            static_cast<int>(model_bytes.size()))) {
    return absl::InvalidArgumentError(
        "model bytes are not a valid ONNX ModelProto");
  }
  if (!model.has_graph()) {
    return absl::InvalidArgumentError("the ONNX model has no graph");
  }

  // The default domain may be spelled "" or "ai.onnx"; ONNX's tools key on
  // "", so normalise before anything looks it up.
  int64_t opset = 0;
  std::unordered_map<std::string, int> opsets;
  for (onnx::OperatorSetIdProto& imp : *model.mutable_opset_import()) {
    if (IsDefaultDomain(imp.domain())) {
      if (opset != 0 && opset != imp.version()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "the model imports the default ONNX domain twice, at opsets ",
            opset, " and ", imp.version()));
      }
      imp.set_domain("");
      opset = imp.version();
    }
    opsets[imp.domain()] = static_cast<int>(imp.version());
  }

  onnx::GraphProto* graph = model.mutable_graph();
  for (onnx::NodeProto& node : *graph->mutable_node()) {
    if (IsDefaultDomain(node.domain())) node.set_domain("");
  }
  GLINT_RETURN_IF_ERROR(CheckNamesAreUtf8(*graph));
  AssignNodeNames(graph);
  // Before the opset check: a model made only of another domain's ops
  // (training ops, contrib ops) is told so rather than "no opset".
  GLINT_RETURN_IF_ERROR(CheckDomains(*graph));
  if (opset <= 0 || opset > INT_MAX) {
    return absl::InvalidArgumentError(
        "the model imports no valid opset of the default ONNX domain");
  }
  if (opset < 7 || opset > 18) {
    GLINT_LOG_WARN("ONNX import: opset {} is outside the tested range 7..18",
                   opset);
  }
  GLINT_RETURN_IF_ERROR(CheckNodesRunnable(*graph, opset, options));
  if (graph->sparse_initializer_size() > 0) {
    return absl::UnimplementedError(absl::StrCat(
        "initializer '", graph->sparse_initializer(0).values().name(),
        "' is sparse, which Glint does not support"));
  }

  // Initializers first: old models (IR < 4) also list them as graph inputs,
  // and those are constants, not inputs a request provides.
  std::map<std::string, Tensor> initializers;
  for (const onnx::TensorProto& proto : graph->initializer()) {
    if (proto.name().empty()) {
      return absl::InvalidArgumentError("an initializer has no name");
    }
    absl::StatusOr<Tensor> t = TensorFromOnnxProto(proto);
    if (!t.ok()) {
      return absl::Status(t.status().code(),
                          absl::StrCat("initializer '", proto.name(),
                                       "': ", t.status().message()));
    }
    if (!initializers.emplace(proto.name(), *std::move(t)).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("initializer '", proto.name(), "' is defined twice"));
    }
  }

  absl::flat_hash_set<std::string> input_names;
  for (const auto& in : graph->input()) input_names.insert(in.name());
  for (const auto& [name, shape] : options.input_shapes) {
    if (initializers.count(name) > 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "input_shapes names '", name,
          "', which is an initializer of the model, not a runtime input"));
    }
    if (!input_names.contains(name)) {
      return absl::InvalidArgumentError(
          absl::StrCat("input_shapes names '", name,
                       "', which is not an input of the "
                       "model"));
    }
  }

  Graph result;
  result.name = graph->name();
  result.opset_version = opset;
  absl::flat_hash_set<std::string> graph_values;
  for (onnx::ValueInfoProto& in : *graph->mutable_input()) {
    const std::string& name = in.name();
    if (name.empty()) {
      return absl::InvalidArgumentError("a graph input has no name");
    }
    if (!graph_values.insert(name).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("graph input '", name, "' is declared twice"));
    }
    auto init = initializers.find(name);
    if (init != initializers.end()) {
      // Describe it by its tensor so inference sees the exact type even
      // where the input declaration was vague.
      onnx::TypeProto_Tensor* type = in.mutable_type()->mutable_tensor_type();
      type->set_elem_type(static_cast<int32_t>(init->second.dtype()));
      type->clear_shape();
      onnx::TensorShapeProto* shape = type->mutable_shape();
      for (int64_t d : init->second.shape().dims()) {
        shape->add_dim()->set_dim_value(d);
      }
      continue;
    }
    if (!in.has_type() ||
        in.type().value_case() == onnx::TypeProto::VALUE_NOT_SET) {
      return absl::InvalidArgumentError(
          absl::StrCat("graph input '", name, "' declares no type"));
    }
    if (!in.type().has_tensor_type()) {
      return absl::UnimplementedError(absl::StrCat(
          "graph input '", name,
          "' is not a tensor (sequences, maps and optionals are not "
          "supported)"));
    }
    onnx::TypeProto_Tensor* type = in.mutable_type()->mutable_tensor_type();
    if (type->elem_type() == onnx::TensorProto::UNDEFINED) {
      return absl::InvalidArgumentError(
          absl::StrCat("graph input '", name, "' declares no element type"));
    }
    absl::StatusOr<DType> dtype = DTypeFromOnnx(type->elem_type());
    if (!dtype.ok()) {
      return absl::UnimplementedError(absl::StrCat(
          "graph input '", name, "' has element type ",
          OnnxTypeName(type->elem_type()), ", which Glint does not support"));
    }
    ValueInfo info;
    info.name = name;
    info.dtype = *dtype;
    GLINT_ASSIGN_OR_RETURN(info.shape, BindInputShape(name, type, options));
    GLINT_RETURN_IF_ERROR(CheckTensorSize(
        info.dtype, info.shape, absl::StrCat("graph input '", name, "'")));
    result.values[name] = info;
    result.inputs.push_back(std::move(info));
  }
  for (const auto& [name, tensor] : initializers) {
    graph_values.insert(name);
    result.values[name] = ValueInfo{name, tensor.dtype(), tensor.shape()};
  }

  GLINT_RETURN_IF_ERROR(SortNodes(graph, graph_values));
  if (options.run_inference) {
    GLINT_RETURN_IF_ERROR(InferTypesElsewhere(&model, options.run_inference));
  } else {
    GLINT_RETURN_IF_ERROR(InferTypes(&model));
  }

  const auto types = IndexTypes(*graph);
  std::vector<std::string> unknown_rank;
  result.nodes.reserve(graph->node_size());
  for (const onnx::NodeProto& proto : graph->node()) {
    Node node;
    node.name = proto.name();
    node.op_type = proto.op_type();
    node.domain = proto.domain();
    node.inputs.assign(proto.input().begin(), proto.input().end());
    node.outputs.assign(proto.output().begin(), proto.output().end());
    for (const onnx::AttributeProto& attr : proto.attribute()) {
      GLINT_ASSIGN_OR_RETURN(Attribute value, ConvertAttribute(attr, proto));
      node.attributes.emplace(attr.name(), std::move(value));
    }
    for (const std::string& out : node.outputs) {
      if (out.empty()) continue;
      GLINT_ASSIGN_OR_RETURN(ValueInfo info,
                             NodeOutputInfo(out, proto, types, &unknown_rank));
      result.values[out] = std::move(info);
    }
    result.nodes.push_back(std::move(node));
  }
  result.initializers = std::move(initializers);

  absl::flat_hash_set<std::string> output_names;
  for (const onnx::ValueInfoProto& out : graph->output()) {
    if (!output_names.insert(out.name()).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("graph output '", out.name(), "' is listed twice"));
    }
    const ValueInfo* info = result.FindValue(out.name());
    if (info == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("graph output '", out.name(), "' is never produced"));
    }
    result.outputs.push_back(*info);
  }
  if (!unknown_rank.empty()) {
    GLINT_LOG_DEBUG("ONNX import of '{}': rank unknown until run time for {}",
                    result.name, absl::StrJoin(unknown_rank, ", "));
  }
  GLINT_RETURN_IF_ERROR(result.Validate());
  return result;
}

}  // namespace

absl::StatusOr<std::string> RunOnnxInference(absl::string_view request) {
  try {
    onnx::ModelProto model;
    if (request.size() > static_cast<size_t>(INT_MAX) ||
        !model.ParseFromArray(request.data(),
                              static_cast<int>(request.size())) ||
        !model.has_graph()) {
      return absl::InvalidArgumentError(
          "the inference request is not a prepared ONNX model");
    }
    GLINT_RETURN_IF_ERROR(InferTypes(&model));
    onnx::GraphProto inferred;
    inferred.mutable_value_info()->Swap(
        model.mutable_graph()->mutable_value_info());
    inferred.mutable_output()->Swap(model.mutable_graph()->mutable_output());
    return inferred.SerializeAsString();
  } catch (...) {
    return StatusFromException("ONNX shape inference failed");
  }
}

absl::StatusOr<Graph> ImportOnnxModel(absl::string_view model_bytes,
                                      const ImportOptions& options) {
  // ONNX and the is_supported callback may throw; the API promises a
  // status, never an exception.
  try {
    return Import(model_bytes, options);
  } catch (...) {
    absl::Status s = StatusFromException("ONNX import failed");
    return s.code() == absl::StatusCode::kResourceExhausted
               ? s
               : absl::InternalError(s.message());
  }
}

}  // namespace glint
