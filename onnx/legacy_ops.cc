#include "onnx/legacy_ops.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "onnx/import_util.h"

namespace glint::onnx_internal {
namespace {

// Ops whose opset 1..6 forms carry `broadcast` and `axis`.
const absl::flat_hash_set<std::string>& LegacyBroadcastOps() {
  static const auto* const kOps = new absl::flat_hash_set<std::string>{
      "Add", "Sub", "Mul", "Div", "Pow", "And",
      "Or",  "Xor", "Equal", "Greater", "Less"};
  return *kOps;
}

onnx::AttributeProto* FindAttr(onnx::NodeProto* node, const std::string& name) {
  for (onnx::AttributeProto& a : *node->mutable_attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

void RemoveAttr(onnx::NodeProto* node, const std::string& name) {
  auto* attrs = node->mutable_attribute();
  for (int i = 0; i < attrs->size(); ++i) {
    if (attrs->Get(i).name() == name) {
      attrs->DeleteSubrange(i, 1);
      return;
    }
  }
}

const onnx::TypeProto_Tensor* TensorType(const TypeIndex& types,
                                         const std::string& value) {
  auto it = types.find(value);
  if (it == types.end() || !it->second->has_tensor_type()) return nullptr;
  return &it->second->tensor_type();
}

// The rank of `value` when inference knows it, else -1.
int RankOf(const TypeIndex& types, const std::string& value) {
  const onnx::TypeProto_Tensor* t = TensorType(types, value);
  return t != nullptr && t->has_shape() ? t->shape().dim_size() : -1;
}

class Upgrader {
 public:
  Upgrader(onnx::GraphProto* graph, std::map<std::string, Tensor>* inits)
      : graph_(graph), inits_(inits), types_(IndexTypes(*graph)) {}

  // Gives input `i` of `node` `trailing` more dims of 1; the new node (an
  // Unsqueeze) goes to `before` when one is needed.
  absl::Status AppendOnes(onnx::NodeProto* node, int i, int trailing,
                          std::vector<onnx::NodeProto>* before) {
    const std::string value = node->input(i);
    const std::string renamed =
        absl::StrCat(value, "__legacy_", node->name(), "_", i);
    auto init = inits_->find(value);
    if (init != inits_->end()) {
      std::vector<int64_t> dims = init->second.shape().dims();
      dims.insert(dims.end(), trailing, 1);
      const Tensor& t = init->second;
      GLINT_ASSIGN_OR_RETURN(
          Tensor reshaped,
          Tensor::FromBytes(t.dtype(), Shape(std::move(dims)),
                            absl::MakeConstSpan(
                                static_cast<const uint8_t*>(t.raw_data()),
                                t.num_bytes())));
      (*inits_)[renamed] = std::move(reshaped);
      node->set_input(i, renamed);
      return absl::OkStatus();
    }
    const onnx::TypeProto_Tensor* type = TensorType(types_, value);
    const int rank = RankOf(types_, value);
    if (type == nullptr || rank < 0) {
      return absl::UnimplementedError(absl::StrCat(
          DescribeNode(*node), ": the legacy broadcast needs the rank of '",
          value, "', which shape inference left unknown"));
    }
    onnx::NodeProto unsqueeze;
    unsqueeze.set_op_type("Unsqueeze");
    unsqueeze.set_name(absl::StrCat(node->name(), "/legacy_unsqueeze_", i));
    unsqueeze.add_input(value);
    unsqueeze.add_output(renamed);
    onnx::AttributeProto* axes = unsqueeze.add_attribute();
    axes->set_name("axes");
    axes->set_type(onnx::AttributeProto::INTS);
    for (int d = 0; d < trailing; ++d) axes->add_ints(rank + d);
    before->push_back(std::move(unsqueeze));
    onnx::ValueInfoProto* vi = graph_->add_value_info();
    vi->set_name(renamed);
    onnx::TypeProto_Tensor* out = vi->mutable_type()->mutable_tensor_type();
    *out = *type;
    for (int d = 0; d < trailing; ++d) {
      out->mutable_shape()->add_dim()->set_dim_value(1);
    }
    node->set_input(i, renamed);
    return absl::OkStatus();
  }

  // Add/Sub/... with broadcast=1 and axis.
  absl::Status Broadcast(onnx::NodeProto* node,
                         std::vector<onnx::NodeProto>* before) {
    const onnx::AttributeProto* bcast = FindAttr(node, "broadcast");
    const onnx::AttributeProto* axis_attr = FindAttr(node, "axis");
    const bool broadcast = bcast != nullptr && bcast->i() != 0;
    if (broadcast && axis_attr != nullptr && node->input_size() == 2) {
      const int a_rank = RankOf(types_, node->input(0));
      const int b_rank = inits_->count(node->input(1))
                             ? inits_->at(node->input(1)).shape().rank()
                             : RankOf(types_, node->input(1));
      if (a_rank < 0 || b_rank < 0) {
        return absl::UnimplementedError(absl::StrCat(
            DescribeNode(*node), ": broadcast with axis needs the ranks of "
            "both operands, which shape inference left unknown"));
      }
      int64_t axis = axis_attr->i();
      if (axis < 0) axis += a_rank;
      const int64_t trailing = a_rank - axis - b_rank;
      if (axis < 0 || trailing < 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            DescribeNode(*node), ": axis ", axis_attr->i(), " places B (rank ",
            b_rank, ") past A's rank ", a_rank));
      }
      if (trailing > 0) {
        GLINT_RETURN_IF_ERROR(
            AppendOnes(node, 1, static_cast<int>(trailing), before));
      }
    }
    RemoveAttr(node, "broadcast");
    RemoveAttr(node, "axis");
    return absl::OkStatus();
  }

  // PRelu's per-channel slope.
  absl::Status PRelu(onnx::NodeProto* node,
                     std::vector<onnx::NodeProto>* before) {
    if (node->input_size() != 2) return absl::OkStatus();
    const int x_rank = RankOf(types_, node->input(0));
    const onnx::TypeProto_Tensor* x = TensorType(types_, node->input(0));
    std::vector<int64_t> slope_dims;
    auto init = inits_->find(node->input(1));
    if (init != inits_->end()) {
      slope_dims = init->second.shape().dims();
    } else if (const onnx::TypeProto_Tensor* s =
                   TensorType(types_, node->input(1));
               s != nullptr && s->has_shape()) {
      for (const auto& d : s->shape().dim()) {
        slope_dims.push_back(d.has_dim_value() ? d.dim_value() : -1);
      }
    } else {
      return absl::OkStatus();  // Rank unknown: numpy rules at run time.
    }
    if (x_rank < 3 || slope_dims.size() != 1 || slope_dims[0] == 1) {
      return absl::OkStatus();
    }
    const auto& c = x->shape().dim(1);
    if (c.has_dim_value() && slope_dims[0] >= 0 &&
        c.dim_value() != slope_dims[0]) {
      return absl::OkStatus();  // Not per channel: the kernel judges.
    }
    return AppendOnes(node, 1, x_rank - 2, before);
  }

  absl::Status Cast(onnx::NodeProto* node) {
    onnx::AttributeProto* to = FindAttr(node, "to");
    if (to == nullptr || to->type() != onnx::AttributeProto::STRING) {
      return absl::OkStatus();
    }
    onnx::TensorProto::DataType type;
    if (!onnx::TensorProto::DataType_Parse(to->s(), &type)) {
      return absl::InvalidArgumentError(absl::StrCat(
          DescribeNode(*node), ": 'to' names no ONNX type: '", to->s(), "'"));
    }
    to->clear_s();
    to->set_type(onnx::AttributeProto::INT);
    to->set_i(type);
    return absl::OkStatus();
  }

  void ConcatAxis(onnx::NodeProto* node) {
    if (FindAttr(node, "axis") != nullptr) return;
    onnx::AttributeProto* axis = node->add_attribute();
    axis->set_name("axis");
    axis->set_type(onnx::AttributeProto::INT);
    axis->set_i(1);
  }

  // Tile-1..5: (input, tiles, axis), scalars: repeat along one axis, as
  // Tile-6's repeats when both are constants.
  absl::Status TileAxis(onnx::NodeProto* node) {
    if (node->input_size() != 3) return absl::OkStatus();
    auto tiles = inits_->find(node->input(1));
    auto axis = inits_->find(node->input(2));
    const int rank = RankOf(types_, node->input(0));
    if (tiles == inits_->end() || axis == inits_->end() || rank < 0 ||
        tiles->second.num_elements() != 1 ||
        axis->second.num_elements() != 1 ||
        tiles->second.dtype() != DType::kInt64 ||
        axis->second.dtype() != DType::kInt64) {
      return absl::UnimplementedError(absl::StrCat(
          DescribeNode(*node), ": Tile-1 needs constant int64 scalars for "
          "tiles and axis and an input of known rank"));
    }
    int64_t a = *axis->second.data<int64_t>();
    if (a < 0) a += rank;
    if (a < 0 || a >= rank) {
      return absl::InvalidArgumentError(absl::StrCat(
          DescribeNode(*node), ": axis ", *axis->second.data<int64_t>(),
          " is outside the input's rank ", rank));
    }
    std::vector<int64_t> repeats(rank, 1);
    repeats[a] = *tiles->second.data<int64_t>();
    const std::string name = node->name() + "/legacy_repeats";
    (*inits_)[name] =
        Tensor::FromVector(DType::kInt64, Shape({rank}), repeats);
    node->mutable_input()->RemoveLast();
    node->set_input(1, name);
    return absl::OkStatus();
  }

  // Split-1: `split` as a constant second input becomes the attribute.
  absl::Status SplitInput(onnx::NodeProto* node) {
    if (node->input_size() != 2 || node->input(1).empty()) {
      return absl::OkStatus();
    }
    auto split = inits_->find(node->input(1));
    if (split == inits_->end() || split->second.dtype() != DType::kInt64) {
      return absl::UnimplementedError(absl::StrCat(
          DescribeNode(*node), ": Split-1's split must be a constant int64"));
    }
    onnx::AttributeProto* attr = FindAttr(node, "split");
    if (attr == nullptr) attr = node->add_attribute();
    attr->Clear();
    attr->set_name("split");
    attr->set_type(onnx::AttributeProto::INTS);
    const int64_t* v = split->second.data<int64_t>();
    for (int64_t i = 0; i < split->second.num_elements(); ++i) {
      attr->add_ints(v[i]);
    }
    node->mutable_input()->RemoveLast();
    return absl::OkStatus();
  }

  // BatchNormalization-1..8 with spatial=0: statistics per (channel,
  // position), params of shape [C, D1, ...]. As elementwise ops (numpy
  // rules align the params with X's trailing dims):
  // Y = (X - mean) / sqrt(var + epsilon) * scale + B. False (node kept,
  // the kernel refuses it) for a form this does not cover.
  bool NonSpatialBatchNorm(const onnx::NodeProto& node,
                           std::vector<onnx::NodeProto>* chain) {
    const onnx::AttributeProto* spatial =
        FindAttr(const_cast<onnx::NodeProto*>(&node), "spatial");
    if (spatial == nullptr || spatial->i() != 0 || node.input_size() != 5 ||
        node.output_size() < 1) {
      return false;
    }
    for (int i = 1; i < node.output_size(); ++i) {
      if (!node.output(i).empty()) return false;  // Training outputs.
    }
    const onnx::TypeProto_Tensor* x = TensorType(types_, node.input(0));
    if (x == nullptr) return false;
    DType eps_dtype;
    if (x->elem_type() == onnx::TensorProto::FLOAT) {
      eps_dtype = DType::kFloat32;
    } else if (x->elem_type() == onnx::TensorProto::DOUBLE) {
      eps_dtype = DType::kFloat64;
    } else {
      return false;
    }
    const onnx::AttributeProto* eps_attr =
        FindAttr(const_cast<onnx::NodeProto*>(&node), "epsilon");
    const double eps = eps_attr != nullptr ? eps_attr->f() : 1e-5;
    const std::string p = node.name() + "/legacy_bn_";
    (*inits_)[p + "epsilon"] =
        eps_dtype == DType::kFloat32
            ? Tensor::FromVector(DType::kFloat32, Shape(),
                                 std::vector<float>{static_cast<float>(eps)})
            : Tensor::FromVector(DType::kFloat64, Shape(),
                                 std::vector<double>{eps});
    auto typed = [&](const std::string& name, const std::string& like) {
      onnx::ValueInfoProto* vi = graph_->add_value_info();
      vi->set_name(name);
      const onnx::TypeProto_Tensor* t = TensorType(types_, like);
      onnx::TypeProto_Tensor* out = vi->mutable_type()->mutable_tensor_type();
      if (t != nullptr) {
        *out = *t;
      } else {
        out->set_elem_type(x->elem_type());
      }
    };
    auto add = [&](const std::string& op, const std::string& a,
                   const std::string& b, const std::string& out,
                   const std::string& like) {
      onnx::NodeProto n;
      n.set_op_type(op);
      n.set_name(p + op + "_" + out);
      n.add_input(a);
      if (!b.empty()) n.add_input(b);
      n.add_output(out);
      chain->push_back(std::move(n));
      if (out != node.output(0)) typed(out, like);
    };
    const std::string& xv = node.input(0);
    add("Sub", xv, node.input(3), p + "centered", xv);
    add("Add", node.input(4), p + "epsilon", p + "var_eps", node.input(4));
    add("Sqrt", p + "var_eps", "", p + "std", node.input(4));
    add("Div", p + "centered", p + "std", p + "normalized", xv);
    add("Mul", p + "normalized", node.input(1), p + "scaled", xv);
    add("Add", p + "scaled", node.input(2), node.output(0), xv);
    return true;
  }

 private:
  onnx::GraphProto* graph_;
  std::map<std::string, Tensor>* inits_;
  const TypeIndex types_;
};

}  // namespace

absl::Status UpgradeLegacyNodes(int64_t opset, onnx::GraphProto* graph,
                                std::map<std::string, Tensor>* initializers) {
  if (opset >= 9) return absl::OkStatus();
  // The index points at value_info elements, which adding more does not
  // move (a RepeatedPtrField holds its elements by pointer).
  Upgrader up(graph, initializers);
  google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
  for (onnx::NodeProto& node : *graph->mutable_node()) {
    std::vector<onnx::NodeProto> before;
    if (IsDefaultDomain(node.domain()) && node.op_type() == "BatchNormalization") {
      std::vector<onnx::NodeProto> chain;
      if (up.NonSpatialBatchNorm(node, &chain)) {
        for (onnx::NodeProto& n : chain) *nodes.Add() = std::move(n);
        continue;
      }
    }
    if (IsDefaultDomain(node.domain()) && opset < 7) {
      const std::string& op = node.op_type();
      if (LegacyBroadcastOps().contains(op)) {
        GLINT_RETURN_IF_ERROR(up.Broadcast(&node, &before));
      } else if (op == "PRelu") {
        GLINT_RETURN_IF_ERROR(up.PRelu(&node, &before));
      } else if (op == "Cast") {
        GLINT_RETURN_IF_ERROR(up.Cast(&node));
      } else if (op == "Concat" && opset < 4) {
        up.ConcatAxis(&node);
      } else if (op == "Tile" && opset < 6) {
        GLINT_RETURN_IF_ERROR(up.TileAxis(&node));
      } else if (op == "Split" && opset < 2) {
        GLINT_RETURN_IF_ERROR(up.SplitInput(&node));
      }
    }
    for (onnx::NodeProto& b : before) *nodes.Add() = std::move(b);
    *nodes.Add() = std::move(node);
  }
  graph->mutable_node()->Swap(&nodes);
  return absl::OkStatus();
}

}  // namespace glint::onnx_internal
