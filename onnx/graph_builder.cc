#include "onnx/graph_builder.h"

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/logging.h"
#include "core/status_macros.h"
#include "core/text.h"
#include "onnx/import_util.h"
#include "onnx/onnx_tensor.h"

namespace glint::onnx_internal {
namespace {

// Refuses input_shapes entries that name no runtime input of the model.
absl::Status CheckInputShapesNames(
    const onnx::GraphProto& graph,
    const std::map<std::string, Tensor>& initializers,
    const ImportOptions& options) {
  absl::flat_hash_set<std::string> input_names;
  for (const auto& in : graph.input()) input_names.insert(in.name());
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
  return absl::OkStatus();
}

// The shape the caller gave for input `name`: fully static, and of the
// declared rank and known dims where `type` declares a shape.
absl::StatusOr<Shape> GivenShape(const std::string& name, const Shape& given,
                                 const onnx::TypeProto_Tensor& type) {
  for (int64_t d : given.dims()) {
    if (d < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("the shape given for input '", name, "' (",
                       given.ToString(), ") is not fully static"));
    }
  }
  if (!type.has_shape()) return given;
  const onnx::TensorShapeProto& declared = type.shape();
  bool compatible = declared.dim_size() == given.rank();
  for (int i = 0; compatible && i < declared.dim_size(); ++i) {
    if (declared.dim(i).has_dim_value() &&
        declared.dim(i).dim_value() != given.dim(i)) {
      compatible = false;
    }
  }
  if (compatible) return given;
  std::vector<std::string> shown;
  for (const auto& d : declared.dim()) {
    shown.push_back(d.has_dim_value()   ? absl::StrCat(d.dim_value())
                    : d.has_dim_param() ? d.dim_param()
                                        : std::string("?"));
  }
  return absl::InvalidArgumentError(
      absl::StrCat("the shape given for input '", name, "' (", given.ToString(),
                   ") does not match its declared shape [",
                   absl::StrJoin(shown, ", "), "]"));
}

// A named dim is one size wherever it appears (ONNX's dim_param): the sizes
// input_shapes gives named dims are written into the other inputs' dims of
// those names, so that they are fixed too rather than left dynamic (and
// free to differ). INVALID_ARGUMENT when input_shapes gives one name two
// sizes.
absl::Status FixNamedDims(onnx::GraphProto* graph,
                          const ImportOptions& options) {
  std::map<std::string, std::pair<int64_t, std::string>> fixed;  // By name.
  for (const onnx::ValueInfoProto& in : graph->input()) {
    auto given = options.input_shapes.find(in.name());
    if (given == options.input_shapes.end() || !in.has_type() ||
        !in.type().has_tensor_type() || !in.type().tensor_type().has_shape()) {
      continue;
    }
    const onnx::TensorShapeProto& declared = in.type().tensor_type().shape();
    if (declared.dim_size() != given->second.rank()) continue;  // GivenShape.
    for (int i = 0; i < declared.dim_size(); ++i) {
      const std::string& param = declared.dim(i).dim_param();
      if (declared.dim(i).has_dim_value() || param.empty()) continue;
      const int64_t size = given->second.dim(i);
      auto [it, inserted] = fixed.emplace(param, std::make_pair(size, in.name()));
      if (!inserted && it->second.first != size) {
        return absl::InvalidArgumentError(absl::StrCat(
            "input_shapes give dim '", Clip(param), "' two sizes: ",
            it->second.first, " (input '", it->second.second, "') and ", size,
            " (input '", in.name(), "')"));
      }
    }
  }
  if (fixed.empty()) return absl::OkStatus();
  for (onnx::ValueInfoProto& in : *graph->mutable_input()) {
    if (options.input_shapes.count(in.name()) > 0 || !in.has_type() ||
        !in.type().has_tensor_type()) {
      continue;
    }
    onnx::TensorShapeProto* shape =
        in.mutable_type()->mutable_tensor_type()->mutable_shape();
    for (auto& d : *shape->mutable_dim()) {
      auto it = d.has_dim_value() ? fixed.end() : fixed.find(d.dim_param());
      if (it != fixed.end()) d.set_dim_value(it->second.first);
    }
  }
  return absl::OkStatus();
}

// The shape input `name` declares, its symbolic or unknown dims left
// unknown (Shape::kUnknownDim): each request brings its own size for them,
// and the caller can bind them for good through input_shapes.
absl::StatusOr<Shape> DeclaredShape(const std::string& name,
                                    const onnx::TypeProto_Tensor& type) {
  if (!type.has_shape()) {
    return absl::InvalidArgumentError(
        absl::StrCat("input '", name,
                     "' declares no shape (its rank is unknown); give "
                     "its shape in ImportOptions::input_shapes"));
  }
  std::vector<int64_t> dims;
  for (const auto& d : type.shape().dim()) {
    if (!d.has_dim_value()) {
      dims.push_back(Shape::kUnknownDim);
    } else if (d.dim_value() < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "input '", name, "' declares negative dimension ", d.dim_value()));
    } else {
      dims.push_back(d.dim_value());
    }
  }
  return Shape(std::move(dims));
}

// The names `shape` gives the dims it leaves unknown (dim_param), one per
// dim, "" for the others; empty when it names none.
std::vector<std::string> DimNames(const onnx::TensorShapeProto& shape) {
  std::vector<std::string> names;
  bool named = false;
  for (const auto& d : shape.dim()) {
    names.push_back(d.has_dim_value() ? "" : d.dim_param());
    named = named || !names.back().empty();
  }
  if (!named) names.clear();
  return names;
}

// Binds the dims of one runtime input and writes the known ones back into
// the proto, so that shape inference propagates concrete sizes (the dims
// left unknown keep their symbolic names, which inference propagates).
absl::StatusOr<Shape> BindInputShape(const std::string& name,
                                     onnx::TypeProto_Tensor* type,
                                     const ImportOptions& options) {
  auto it = options.input_shapes.find(name);
  GLINT_ASSIGN_OR_RETURN(Shape shape, it != options.input_shapes.end()
                                          ? GivenShape(name, it->second, *type)
                                          : DeclaredShape(name, *type));
  if (options.batch_size > 0) {
    if (shape.rank() == 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "input '", name,
          "' is a scalar: dynamic batching needs a batch dimension first"));
    }
    const bool fixed = type->has_shape() && type->shape().dim_size() > 0 &&
                       type->shape().dim(0).has_dim_value();
    if (fixed && type->shape().dim(0).dim_value() != options.batch_size) {
      return absl::InvalidArgumentError(absl::StrCat(
          "input '", name, "' fixes its first dimension to ",
          type->shape().dim(0).dim_value(),
          "; dynamic batching needs it symbolic (the batch dimension) or "
          "equal to max_batch_size ",
          options.batch_size));
    }
    // Other unknown dims stay dynamic: the batcher merges requests whose
    // other dims are equal (runtime/batcher.h).
    shape.mutable_dims()[0] = options.batch_size;
  }
  onnx::TensorShapeProto* proto = type->mutable_shape();
  const onnx::TensorShapeProto declared = *proto;
  proto->clear_dim();
  for (int i = 0; i < shape.rank(); ++i) {
    if (shape.dim(i) != Shape::kUnknownDim) {
      proto->add_dim()->set_dim_value(shape.dim(i));
    } else {
      *proto->add_dim() = declared.dim(i);  // Its dim_param, if any.
    }
  }
  return shape;
}

// The type of runtime input `in`, its dims bound by BindInputShape.
absl::StatusOr<ValueInfo> ReadRuntimeInput(onnx::ValueInfoProto* in,
                                           const ImportOptions& options) {
  const std::string& name = in->name();
  if (!in->has_type() ||
      in->type().value_case() == onnx::TypeProto::VALUE_NOT_SET) {
    return absl::InvalidArgumentError(
        absl::StrCat("graph input '", name, "' declares no type"));
  }
  if (!in->type().has_tensor_type()) {
    return absl::UnimplementedError(
        absl::StrCat("graph input '", name,
                     "' is not a tensor (sequences, maps and optionals are not "
                     "supported)"));
  }
  onnx::TypeProto_Tensor* type = in->mutable_type()->mutable_tensor_type();
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
  info.dim_names = DimNames(type->shape());  // Of the dims left unbound.
  GLINT_RETURN_IF_ERROR(CheckTensorSize(
      info.dtype, info.shape, absl::StrCat("graph input '", name, "'")));
  return info;
}

// Describes an input that is also an initializer by its tensor, so that
// inference sees the exact type even where the declaration was vague.
void DescribeByTensor(const Tensor& tensor, onnx::ValueInfoProto* in) {
  onnx::TypeProto_Tensor* type = in->mutable_type()->mutable_tensor_type();
  type->set_elem_type(static_cast<int32_t>(tensor.dtype()));
  type->clear_shape();
  onnx::TensorShapeProto* shape = type->mutable_shape();
  for (int64_t d : tensor.shape().dims()) shape->add_dim()->set_dim_value(d);
}

// The graphs enclosing the one being built, innermost first: where a
// subgraph's references to outer values are looked up.
struct Scope {
  const Graph* graph = nullptr;
  const Scope* parent = nullptr;
  int depth = 0;  // 0 for the model's graph.

  const ValueInfo* Find(const std::string& value) const {
    for (const Scope* s = this; s != nullptr; s = s->parent) {
      if (const ValueInfo* info = s->graph->FindValue(value)) return info;
    }
    return nullptr;
  }
};

absl::Status AddNode(const onnx::NodeProto& proto, const TypeIndex& types,
                     const Scope& scope,
                     std::vector<std::string>* unknown_rank, Graph* result);
absl::Status AddOutputs(const onnx::GraphProto& graph, Graph* result);

// A subgraph and the outer values it reads (in order of first use).
struct BuiltSubgraph {
  Graph graph;
  std::vector<std::string> captures;
};

// The type of a subgraph's formal input as inference left it: a dtype is
// needed, the shape may be unknown (then Shape::UnknownRank(): the kernels
// check shapes at run time).
absl::StatusOr<ValueInfo> SubgraphInputInfo(const onnx::ValueInfoProto& in,
                                            const std::string& where) {
  const onnx::TypeProto& type = in.type();
  if (type.value_case() != onnx::TypeProto::kTensorType) {
    return absl::UnimplementedError(absl::StrCat(
        where, ": input '", in.name(),
        "' is not a tensor (sequences, maps and optionals are not "
        "supported)"));
  }
  absl::StatusOr<DType> dtype = DTypeFromOnnx(type.tensor_type().elem_type());
  if (!dtype.ok()) {
    return absl::UnimplementedError(absl::StrCat(
        where, ": cannot type input '", in.name(), "' (element type ",
        OnnxTypeName(type.tensor_type().elem_type()), ")"));
  }
  ValueInfo info;
  info.name = in.name();
  info.dtype = *dtype;
  if (type.tensor_type().has_shape()) {
    for (const auto& d : type.tensor_type().shape().dim()) {
      info.shape.mutable_dims().push_back(
          d.has_dim_value() && d.dim_value() >= 0 ? d.dim_value()
                                                  : Shape::kUnknownDim);
    }
    info.dim_names = DimNames(type.tensor_type().shape());
  } else {
    info.shape = Shape::UnknownRank();
  }
  GLINT_RETURN_IF_ERROR(
      CheckTensorSize(info.dtype, info.shape,
                      absl::StrCat(where, ": input '", in.name(), "'")));
  return info;
}

// Builds subgraph `proto` (attribute `attr` of `node`) inside `outer`: its
// formal inputs, initializers, nodes (their own subgraphs first) and
// outputs, and the values it reads from enclosing graphs, which become its
// last inputs (see Node::num_implicit_inputs).
absl::StatusOr<BuiltSubgraph> BuildSubgraph(const onnx::GraphProto& proto,
                                            const std::string& attr,
                                            const onnx::NodeProto& node,
                                            const Scope& outer) {
  const std::string where =
      absl::StrCat("subgraph '", attr, "' of ", DescribeNode(node));
  if (outer.depth + 1 > kMaxSubgraphDepth) {
    return absl::InvalidArgumentError(absl::StrCat(
        where, " nests deeper than ", kMaxSubgraphDepth, " levels"));
  }
  BuiltSubgraph built;
  Graph& g = built.graph;
  g.name = proto.name().empty() ? attr : proto.name();
  g.opset_version = outer.graph->opset_version;
  absl::StatusOr<std::map<std::string, Tensor>> initializers =
      ReadInitializers(proto);
  if (!initializers.ok()) {
    return absl::Status(initializers.status().code(),
                        absl::StrCat(where, ": ",
                                     initializers.status().message()));
  }
  absl::flat_hash_set<std::string> defined;
  for (const auto& [name, tensor] : *initializers) {
    g.values[name] = ValueInfo{name, tensor.dtype(), tensor.shape()};
    defined.insert(name);
  }
  for (const onnx::ValueInfoProto& in : proto.input()) {
    if (initializers->count(in.name()) > 0) continue;  // IR < 4 style.
    if (!defined.insert(in.name()).second) {
      return absl::InvalidArgumentError(absl::StrCat(
          where, ": input '", in.name(), "' is declared twice"));
    }
    GLINT_ASSIGN_OR_RETURN(ValueInfo info, SubgraphInputInfo(in, where));
    g.values[info.name] = info;
    g.inputs.push_back(std::move(info));
  }
  const TypeIndex types = IndexTypes(proto);
  std::vector<std::string> unknown_rank;
  const Scope scope{&g, &outer, outer.depth + 1};
  absl::flat_hash_set<std::string> captured;
  auto read = [&](const std::string& value) -> absl::Status {
    if (value.empty() || defined.contains(value) || captured.contains(value)) {
      return absl::OkStatus();
    }
    const ValueInfo* info = outer.Find(value);
    if (info == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, " reads '", value,
                       "', which no earlier node, input or initializer of it "
                       "or of an enclosing graph provides"));
    }
    captured.insert(value);
    built.captures.push_back(value);
    return absl::OkStatus();
  };
  for (const onnx::NodeProto& n : proto.node()) {
    GLINT_RETURN_IF_ERROR(AddNode(n, types, scope, &unknown_rank, &g));
    // The node's inputs now include its own subgraphs' captures.
    for (const std::string& in : g.nodes.back().inputs) {
      GLINT_RETURN_IF_ERROR(read(in));
    }
    for (const std::string& out : n.output()) {
      if (!out.empty()) defined.insert(out);
    }
  }
  for (const onnx::ValueInfoProto& out : proto.output()) {
    GLINT_RETURN_IF_ERROR(read(out.name()));
  }
  for (const std::string& value : built.captures) {
    ValueInfo info = *outer.Find(value);
    g.values[value] = info;
    g.inputs.push_back(std::move(info));
  }
  g.initializers = *std::move(initializers);
  absl::Status s = AddOutputs(proto, &g);
  if (!s.ok()) {
    return absl::Status(s.code(), absl::StrCat(where, ": ", s.message()));
  }
  return built;
}

// Converts the graph attributes of `proto` into `node`: each built inside
// `scope`, and the union of what they read from outside appended to the
// node's inputs and to every subgraph's inputs, in one order.
absl::Status AddSubgraphs(const onnx::NodeProto& proto, const Scope& scope,
                          Node* node) {
  std::vector<std::pair<std::string, BuiltSubgraph>> built;
  std::vector<std::string> captures;
  absl::flat_hash_set<std::string> seen;
  for (const onnx::AttributeProto& attr : proto.attribute()) {
    if (attr.type() != onnx::AttributeProto::GRAPH) continue;
    GLINT_ASSIGN_OR_RETURN(BuiltSubgraph sub,
                           BuildSubgraph(attr.g(), attr.name(), proto, scope));
    for (const std::string& c : sub.captures) {
      if (seen.insert(c).second) captures.push_back(c);
    }
    built.emplace_back(attr.name(), std::move(sub));
  }
  for (auto& [name, sub] : built) {
    // Each subgraph takes every capture, in the node's order: the first
    // inputs after its formal ones are its own captures, re-ordered here.
    Graph& g = sub.graph;
    g.inputs.resize(g.inputs.size() - sub.captures.size());
    for (const std::string& c : captures) {
      ValueInfo info = *scope.Find(c);
      g.values[c] = info;
      g.inputs.push_back(std::move(info));
    }
    node->attributes[name] =
        std::make_shared<const Graph>(std::move(sub.graph));
  }
  node->inputs.insert(node->inputs.end(), captures.begin(), captures.end());
  node->num_implicit_inputs = static_cast<int>(captures.size());
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
      // CheckModelIsRunnable refused the other kinds already.
      return absl::UnimplementedError(absl::StrCat(
          "attribute '", attr.name(), "' of ", DescribeNode(node), " has type ",
          onnx::AttributeProto_AttributeType_Name(attr.type()),
          ", which Glint does not support"));
  }
}

// The type of a node's output after inference. An unknown rank is kept as
// Shape::UnknownRank() and reported through `unknown_rank`: the runtime
// computes shapes as it goes, so such a value is importable; its kernels
// are built for the shapes each run brings (devices/cpu/late_kernel.h).
absl::StatusOr<ValueInfo> NodeOutputInfo(
    const std::string& value, const onnx::NodeProto& node,
    const TypeIndex& types, std::vector<std::string>* unknown_rank) {
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
    info.dim_names = DimNames(t.shape());
  } else {
    info.shape = Shape::UnknownRank();
    unknown_rank->push_back(value);
  }
  return info;
}

// Adds the node `proto` to `result` (the graph of `scope`), with its
// outputs' types and its subgraphs.
absl::Status AddNode(const onnx::NodeProto& proto, const TypeIndex& types,
                     const Scope& scope,
                     std::vector<std::string>* unknown_rank, Graph* result) {
  Node node;
  node.name = proto.name();
  node.op_type = proto.op_type();
  node.domain = proto.domain();
  node.inputs.assign(proto.input().begin(), proto.input().end());
  node.outputs.assign(proto.output().begin(), proto.output().end());
  for (const onnx::AttributeProto& attr : proto.attribute()) {
    if (attr.type() == onnx::AttributeProto::GRAPH) continue;
    GLINT_ASSIGN_OR_RETURN(Attribute value, ConvertAttribute(attr, proto));
    node.attributes.emplace(attr.name(), std::move(value));
  }
  GLINT_RETURN_IF_ERROR(AddSubgraphs(proto, scope, &node));
  for (const std::string& out : node.outputs) {
    if (out.empty()) continue;
    GLINT_ASSIGN_OR_RETURN(ValueInfo info,
                           NodeOutputInfo(out, proto, types, unknown_rank));
    result->values[out] = std::move(info);
  }
  result->nodes.push_back(std::move(node));
  return absl::OkStatus();
}

absl::Status AddOutputs(const onnx::GraphProto& graph, Graph* result) {
  absl::flat_hash_set<std::string> output_names;
  for (const onnx::ValueInfoProto& out : graph.output()) {
    if (!output_names.insert(out.name()).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("graph output '", out.name(), "' is listed twice"));
    }
    const ValueInfo* info = result->FindValue(out.name());
    if (info == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("graph output '", out.name(), "' is never produced"));
    }
    result->outputs.push_back(*info);
  }
  return absl::OkStatus();
}

}  // namespace

namespace {

// Reads `proto` into `initializers`. ReadInitializers' errors.
absl::Status ReadInitializer(const onnx::TensorProto& proto,
                             std::map<std::string, Tensor>* initializers) {
  if (proto.name().empty()) {
    return absl::InvalidArgumentError("an initializer has no name");
  }
  absl::StatusOr<Tensor> t = TensorFromOnnxProto(proto);
  if (!t.ok()) {
    return absl::Status(t.status().code(),
                        absl::StrCat("initializer '", proto.name(),
                                     "': ", t.status().message()));
  }
  if (!initializers->emplace(proto.name(), *std::move(t)).second) {
    return absl::InvalidArgumentError(
        absl::StrCat("initializer '", proto.name(), "' is defined twice"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::map<std::string, Tensor>> ReadInitializers(
    const onnx::GraphProto& graph) {
  std::map<std::string, Tensor> initializers;
  for (const onnx::TensorProto& proto : graph.initializer()) {
    GLINT_RETURN_IF_ERROR(ReadInitializer(proto, &initializers));
  }
  return initializers;
}

absl::StatusOr<std::map<std::string, Tensor>> TakeInitializers(
    onnx::GraphProto* graph) {
  absl::flat_hash_set<std::string> inputs;
  for (const onnx::ValueInfoProto& in : graph->input()) {
    inputs.insert(in.name());
  }
  std::map<std::string, Tensor> initializers;
  std::vector<bool> taken(graph->initializer_size(), false);
  bool any_taken = false;
  for (int i = 0; i < graph->initializer_size(); ++i) {
    onnx::TensorProto& proto = *graph->mutable_initializer(i);
    GLINT_RETURN_IF_ERROR(ReadInitializer(proto, &initializers));
    if (proto.ByteSizeLong() <= kInlineInitializerBytes) continue;
    // As the inference helper needs it: typed, without its bytes.
    if (inputs.insert(proto.name()).second) {
      onnx::ValueInfoProto* in = graph->add_input();
      in->set_name(proto.name());
      onnx::TypeProto_Tensor* type = in->mutable_type()->mutable_tensor_type();
      type->set_elem_type(proto.data_type());
      for (int64_t d : proto.dims()) {
        type->mutable_shape()->add_dim()->set_dim_value(d);
      }
    }
    // Its bytes go now, not with the list: one weight at a time.
    onnx::TensorProto().Swap(&proto);
    taken[i] = true;
    any_taken = true;
  }
  if (any_taken) {
    google::protobuf::RepeatedPtrField<onnx::TensorProto> kept;
    for (int i = 0; i < graph->initializer_size(); ++i) {
      if (!taken[i]) *kept.Add() = std::move(*graph->mutable_initializer(i));
    }
    graph->mutable_initializer()->Swap(&kept);
  }
  return initializers;
}

absl::Status BindInputs(onnx::GraphProto* graph,
                        const std::map<std::string, Tensor>& initializers,
                        const ImportOptions& options, Graph* result) {
  GLINT_RETURN_IF_ERROR(CheckInputShapesNames(*graph, initializers, options));
  GLINT_RETURN_IF_ERROR(FixNamedDims(graph, options));
  absl::flat_hash_set<std::string> declared;
  for (onnx::ValueInfoProto& in : *graph->mutable_input()) {
    const std::string& name = in.name();
    if (name.empty()) {
      return absl::InvalidArgumentError("a graph input has no name");
    }
    if (!declared.insert(name).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("graph input '", name, "' is declared twice"));
    }
    auto init = initializers.find(name);
    if (init != initializers.end()) {
      // A constant, not an input a request provides.
      DescribeByTensor(init->second, &in);
      continue;
    }
    GLINT_ASSIGN_OR_RETURN(ValueInfo info, ReadRuntimeInput(&in, options));
    result->values[name] = info;
    result->inputs.push_back(std::move(info));
  }
  for (const auto& [name, tensor] : initializers) {
    result->values[name] = ValueInfo{name, tensor.dtype(), tensor.shape()};
  }
  return absl::OkStatus();
}

absl::Status BuildGraph(const onnx::GraphProto& graph,
                        std::map<std::string, Tensor> initializers,
                        Graph* result) {
  const TypeIndex types = IndexTypes(graph);
  std::vector<std::string> unknown_rank;
  result->nodes.reserve(graph.node_size());
  const Scope scope{result, nullptr, 0};
  for (const onnx::NodeProto& proto : graph.node()) {
    GLINT_RETURN_IF_ERROR(AddNode(proto, types, scope, &unknown_rank, result));
  }
  result->initializers = std::move(initializers);
  GLINT_RETURN_IF_ERROR(AddOutputs(graph, result));
  if (!unknown_rank.empty()) {
    GLINT_LOG_DEBUG("ONNX import of '{}': rank unknown until run time for {}",
                    result->name, absl::StrJoin(unknown_rank, ", "));
  }
  return absl::OkStatus();
}

}  // namespace glint::onnx_internal
