#include "onnx/shape_folding.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/algorithm/container.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "core/dim_expr.h"
#include "core/graph.h"
#include "core/status_macros.h"
#include "onnx/dim_naming.h"
#include "onnx/fold_ops.h"
#include "onnx/fold_value.h"
#include "onnx/import_util.h"

namespace glint::onnx_internal {
namespace {

using onnx::TensorProto;

// What one graph knows, with its enclosing graphs' knowledge behind it.
class Scope {
 public:
  Scope(const onnx::GraphProto& graph, const Scope* parent, bool iterates)
      : parent_(parent), types_(IndexTypes(graph)) {
    for (const TensorProto& init : graph.initializer()) {
      defined_.insert(init.name());
      initializers_[init.name()] = &init;
    }
    for (const onnx::ValueInfoProto& in : graph.input()) {
      defined_.insert(in.name());
      // A Loop or Scan body's inputs change from one iteration to the
      // next: their declared shapes are the first iteration's at best.
      if (iterates && initializers_.count(in.name()) == 0) {
        variant_.insert(in.name());
      }
    }
    for (const onnx::NodeProto& node : graph.node()) {
      for (const std::string& out : node.output()) defined_.insert(out);
    }
  }

  const FoldValue* Find(const std::string& name) const {
    if (name.empty()) return nullptr;
    if (auto it = known_.find(name); it != known_.end()) return &it->second;
    if (auto it = initializers_.find(name); it != initializers_.end()) {
      std::optional<FoldValue> v = ValueFromProto(*it->second);
      if (!v.has_value()) return nullptr;
      return &(known_[name] = *std::move(v));
    }
    if (defined_.contains(name)) return nullptr;
    return parent_ != nullptr ? parent_->Find(name) : nullptr;
  }

  // The shape of `name` where its rank is known and cannot change: each
  // dim fixed, or -1 where it depends on run-time data. `names`, if given,
  // gets the names of the -1 dims (dim_param; "" for the others).
  std::optional<Dims> ShapeOf(const std::string& name,
                              std::vector<std::string>* names = nullptr) const {
    if (name.empty() || variant_.contains(name)) return std::nullopt;
    if (auto it = known_.find(name); it != known_.end()) {
      if (names != nullptr) names->assign(it->second.dims.size(), "");
      return it->second.dims;
    }
    if (auto it = initializers_.find(name); it != initializers_.end()) {
      if (names != nullptr) names->assign(it->second->dims_size(), "");
      return Dims(it->second->dims().begin(), it->second->dims().end());
    }
    if (auto it = types_.find(name); it != types_.end()) {
      const onnx::TypeProto& type = *it->second;
      if (!type.has_tensor_type() || !type.tensor_type().has_shape()) {
        return std::nullopt;
      }
      Dims dims;
      if (names != nullptr) names->clear();
      for (const auto& d : type.tensor_type().shape().dim()) {
        const bool fixed = d.has_dim_value() && d.dim_value() >= 0;
        dims.push_back(fixed ? d.dim_value() : -1);
        if (names != nullptr) names->push_back(fixed ? "" : d.dim_param());
      }
      return dims;
    }
    if (defined_.contains(name)) return std::nullopt;
    return parent_ != nullptr ? parent_->ShapeOf(name, names) : std::nullopt;
  }

  void Learn(const std::string& name, FoldValue v) {
    known_[name] = std::move(v);
  }
  // `name` is computed from a value whose shape may vary per iteration.
  void MarkVariant(const std::string& name) { variant_.insert(name); }
  bool IsVariant(const std::string& name) const {
    if (variant_.contains(name)) return true;
    if (defined_.contains(name)) return false;
    return parent_ != nullptr && parent_->IsVariant(name);
  }

 private:
  const Scope* parent_;
  TypeIndex types_;
  absl::flat_hash_map<std::string, const TensorProto*> initializers_;
  absl::flat_hash_set<std::string> defined_;
  absl::flat_hash_set<std::string> variant_;
  // Values read from initializers are cached here on first use.
  mutable absl::flat_hash_map<std::string, FoldValue> known_;
};

// The names of the dims the graph's inputs declare, each standing for the
// size of its dim (1) to tell which names are sizes of them.
using InputDimNames = std::map<std::string, int64_t>;

// Whether the fold may build names on the dim name `name`: one that holds
// a name (never a bare number: a model may name a dim "7"), that ONNX did
// not invent (it changes from one round to the next), and that is a plain
// name or an expression of the inputs' names (core/dim_expr.h), never a
// name of the model's that merely reads as one ("max-len" is no
// subtraction).
bool Buildable(const std::string& name, const InputDimNames& inputs) {
  if (name.empty() || name.size() > kMaxDimExprLength ||
      IsInventedDimName(name)) {
    return false;
  }
  std::optional<DimProduct> product = DimFactors(name);
  if (!product.has_value() || product->factors.empty()) return false;
  if (IsDimIdentifier(name)) return true;
  return inputs.count(name) == 0 && EvaluateDim(name, inputs).has_value();
}

// Size(x): the element count of a fully known shape.
std::optional<FoldValue> SizeValue(const Dims& dims) {
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0) return std::nullopt;
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / d) {
      return std::nullopt;
    }
    n *= d;
  }
  FoldValue v = MakeValue(TensorProto::INT64, {});
  v.ints[0] = n;
  return v;
}

// Shape(x) with Shape-15's start and end: the dims that depend on run-time
// data are its unknown elements, named as x's type names them (`names`).
FoldValue ShapeValue(const onnx::NodeProto& node, const Dims& dims,
                     const std::vector<std::string>& names) {
  const int64_t rank = static_cast<int64_t>(dims.size());
  int64_t start = IntAttr(node, "start", 0);
  int64_t end = IntAttr(node, "end", rank);
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, 0, rank);
  FoldValue v = Int64Vector(Dims(dims.begin() + start,
                                 dims.begin() + std::max(start, end)));
  for (int64_t k = 0; k < v.size(); ++k) {
    if (v.ints[k] < 0) {
      if (v.unknown.empty()) v.unknown.assign(v.size(), false);
      v.unknown[k] = true;
      v.ints[k] = 0;
      if (const std::string& name = names[start + k]; !name.empty()) {
        if (v.symbols.empty()) v.symbols.assign(v.size(), "");
        v.symbols[k] = name;
      }
    }
  }
  return v;
}

// The value `node` computes, where Glint can fold it.
std::optional<FoldValue> Evaluate(const onnx::NodeProto& node,
                                  const Scope& scope, int64_t opset,
                                  const InputDimNames& inputs) {
  const std::string& op = node.op_type();
  if (node.output_size() != 1 || node.output(0).empty()) return std::nullopt;
  // Shape and Size read only their input's shape.
  if (op == "Shape" || op == "Size") {
    if (node.input_size() != 1) return std::nullopt;
    std::vector<std::string> names;
    std::optional<Dims> dims = scope.ShapeOf(node.input(0), &names);
    if (!dims.has_value()) return std::nullopt;
    // Only names the fold may build on become symbols.
    for (std::string& name : names) {
      if (!Buildable(name, inputs)) name.clear();
    }
    return op == "Size" ? SizeValue(*dims) : ShapeValue(node, *dims, names);
  }
  // Every other op reads its inputs' values (fold_ops.h); null where an
  // input is absent or not known.
  std::vector<const FoldValue*> ins;
  for (const std::string& in : node.input()) ins.push_back(scope.Find(in));
  return FoldOp(node, ins, opset);
}

// Rewrites `node` into a Constant node holding `value`.
void MakeConstant(const FoldValue& value, onnx::NodeProto* node) {
  const std::string output = node->output(0);
  node->clear_input();
  node->clear_output();
  node->add_output(output);
  node->clear_attribute();
  node->set_op_type("Constant");
  node->clear_domain();
  onnx::AttributeProto* attr = node->add_attribute();
  attr->set_name("value");
  attr->set_type(onnx::AttributeProto::TENSOR);
  *attr->mutable_t() = ValueToProto(value);
}

// Declares `type` as the type of `value`: its element type and fixed dims.
void SetType(const FoldValue& value, onnx::TypeProto* type) {
  type->Clear();
  onnx::TypeProto_Tensor* t = type->mutable_tensor_type();
  t->set_elem_type(value.type);
  onnx::TensorShapeProto* shape = t->mutable_shape();
  for (int64_t d : value.dims) shape->add_dim()->set_dim_value(d);
}

// An If whose condition is known at import takes one branch: its outputs
// have that branch's types. (libonnx merges both branches' types, and
// exporters write branches of different ranks: torchvision's "squeeze if
// 2-D" gives the If no rank at all.)
// Returns whether it changed a type.
template <typename Declare>
bool TypeIfByItsCondition(
    const onnx::NodeProto& node, const Scope& scope,
    absl::flat_hash_map<std::string, onnx::TypeProto*>* types,
    const Declare& declare) {
  if (node.input_size() < 1) return false;
  const FoldValue* cond = scope.Find(node.input(0));
  if (cond == nullptr || cond->size() != 1 || !cond->complete() ||
      cond->real()) {
    return false;
  }
  const char* taken = cond->ints[0] != 0 ? "then_branch" : "else_branch";
  const onnx::GraphProto* branch = nullptr;
  for (const onnx::AttributeProto& a : node.attribute()) {
    if (a.name() == taken && a.type() == onnx::AttributeProto::GRAPH) {
      branch = &a.g();
    }
  }
  if (branch == nullptr || branch->output_size() != node.output_size()) {
    return false;
  }
  bool changed = false;
  for (int i = 0; i < node.output_size(); ++i) {
    const onnx::TypeProto& from = branch->output(i).type();
    if (node.output(i).empty() || !from.has_tensor_type() ||
        !from.tensor_type().has_shape()) {
      continue;
    }
    onnx::TypeProto*& type = (*types)[node.output(i)];
    if (type == nullptr) type = declare(node.output(i));
    if (type->SerializeAsString() == from.SerializeAsString()) continue;
    *type = from;
    changed = true;
  }
  return changed;
}

// Range(0, n, 1) of an integer n that is a symbolic dim ("seq", read
// through Shape → Gather → Cast) has n elements: its output's one dim gets
// that name, so that what it meets later (position embeddings added to
// token embeddings, a causal mask) is known to be of that size, and ONNX's
// inference propagates the name instead of inventing one per meeting.
// Returns whether it changed the output's type.
template <typename Declare>
bool NameRangeLength(const onnx::NodeProto& node, const Scope& scope,
                     absl::flat_hash_map<std::string, onnx::TypeProto*>* types,
                     const Declare& declare) {
  if (node.input_size() != 3 || node.output_size() != 1 ||
      node.output(0).empty()) {
    return false;
  }
  const FoldValue* start = scope.Find(node.input(0));
  const FoldValue* limit = scope.Find(node.input(1));
  const FoldValue* delta = scope.Find(node.input(2));
  const auto is = [](const FoldValue* v, int64_t want) {
    return v != nullptr && !v->real() && v->size() == 1 && v->complete() &&
           v->ints[0] == want;
  };
  if (!is(start, 0) || !is(delta, 1) || limit == nullptr ||
      limit->size() != 1 || limit->symbol(0).empty() ||
      limit->type != start->type) {
    return false;
  }
  const std::string& name = limit->symbol(0);
  // A name ONNX invented is forgotten before it infers again
  // (ForgetUnsizableDimNames) and comes back as another: naming the Range by
  // it would change its type on every round and the rounds would not end.
  if (IsInventedDimName(name) || name.size() > kMaxDimExprLength) {
    return false;
  }
  onnx::TypeProto*& type = (*types)[node.output(0)];
  if (type == nullptr) type = declare(node.output(0));
  onnx::TypeProto_Tensor* t = type->mutable_tensor_type();
  if (t->has_shape() && t->shape().dim_size() == 1 &&
      (t->shape().dim(0).has_dim_value() ||
       t->shape().dim(0).dim_param() == name)) {
    return false;  // Known already (or a contradiction for ONNX to find).
  }
  t->set_elem_type(start->type);
  t->mutable_shape()->clear_dim();
  t->mutable_shape()->add_dim()->set_dim_param(name);
  return true;
}

// The names ONNX invented for dims this round (unk__N) that the fold has
// given a derived name to (NameDerivedDims). ONNX gives one name to dims it
// knows are one size, so every value of that dim takes the derived name:
// the Relu after a named Conv, and the Conv after it, are named in the
// same pass rather than one round of inference each.
using Renames = absl::flat_hash_map<std::string, std::string>;

// Sets `d` to `name`: a size where it is one, else a dim_param.
void SetDim(const std::string& name, onnx::TensorShapeProto_Dimension* d) {
  int64_t size;
  if (!name.empty() && absl::c_all_of(name, absl::ascii_isdigit) &&
      absl::SimpleAtoi(name, &size)) {
    d->set_dim_value(size);
  } else {
    d->set_dim_param(name);
  }
}

// Renames the names of `type` that `renames` holds.
void ApplyRenames(const Renames& renames, onnx::TypeProto* type) {
  if (renames.empty() || !type->has_tensor_type() ||
      !type->tensor_type().has_shape()) {
    return;
  }
  for (auto& d : *type->mutable_tensor_type()->mutable_shape()->mutable_dim()) {
    if (!d.has_dim_param()) continue;
    if (auto it = renames.find(d.dim_param()); it != renames.end()) {
      SetDim(it->second, &d);
    }
  }
}

// Whether a dim named `name` may be renamed to what a node derives: a name
// ONNX invented, or one no input's dims size (an exporter names each dim
// of its outputs, "Resizeoutput_dim_2").
bool Renameable(const std::string& name, const InputDimNames& inputs) {
  return name.empty() || IsInventedDimName(name) ||
         !EvaluateDim(name, inputs).has_value();
}

// Gives the dims of `node`'s outputs that ONNX left unnamed, or named by a
// name it invented (or an exporter's name no input's dims size), the names
// the node derives for them (dim_naming.h), recording each name so replaced
// in `renames`. Returns whether it named a dim.
bool NameDerivedDims(const onnx::NodeProto& node, const Scope& scope,
                     const std::string& path, int64_t opset,
                     const InputDimNames& inputs,
                     absl::flat_hash_map<std::string, onnx::TypeProto*>* types,
                     Renames* renames) {
  DimSource source;
  source.scope = path;
  source.shape_of = [&scope, &inputs](const std::string& value,
                                      std::vector<std::string>* names) {
    std::optional<Dims> dims = scope.ShapeOf(value, names);
    if (names != nullptr) {
      for (std::string& name : *names) {
        if (!Buildable(name, inputs)) name.clear();
      }
    }
    return dims;
  };
  source.find = [&scope](const std::string& value) {
    return scope.Find(value);
  };
  source.usable_name = [&inputs](const std::string& name) {
    return Buildable(name, inputs);
  };
  bool changed = false;
  for (int i = 0; i < node.output_size(); ++i) {
    if (node.output(i).empty()) continue;
    auto it = types->find(node.output(i));
    if (it == types->end() || !it->second->has_tensor_type() ||
        !it->second->tensor_type().has_shape()) {
      continue;
    }
    onnx::TensorShapeProto* shape =
        it->second->mutable_tensor_type()->mutable_shape();
    bool unnamed = false;
    for (const auto& d : shape->dim()) {
      unnamed =
          unnamed || (!d.has_dim_value() && Renameable(d.dim_param(), inputs));
    }
    if (!unnamed) continue;
    const std::vector<std::string> derived =
        DeriveOutputDimNames(node, i, shape->dim_size(), source, opset);
    for (int k = 0; k < shape->dim_size(); ++k) {
      onnx::TensorShapeProto_Dimension* d = shape->mutable_dim(k);
      // Only names the inputs' dims size: another (one built on an
      // exporter's name) would be forgotten before the next round
      // (ForgetUnsizableDimNames) and named again, round after round.
      if (derived[k].empty() || d->has_dim_value() ||
          !Renameable(d->dim_param(), inputs) || d->dim_param() == derived[k] ||
          !EvaluateDim(derived[k], inputs).has_value()) {
        continue;
      }
      if (!d->dim_param().empty()) {
        renames->try_emplace(d->dim_param(), derived[k]);
      }
      SetDim(derived[k], d);
      changed = true;
    }
  }
  return changed;
}

bool Iterates(const onnx::NodeProto& node) {
  return node.op_type() == "Loop" || node.op_type() == "Scan";
}

// Elements a FoldShapeArithmetic call may evaluate (each node costs one
// plus its inputs' and output's elements): a model of many large folds
// costs milliseconds, never minutes. What is left unfolded runs at run time.
constexpr int64_t kFoldBudget = int64_t{1} << 24;

// Adds the names of `graph`'s inputs' dims to `names`.
void AddInputDimNames(const onnx::GraphProto& graph, InputDimNames* names) {
  for (const onnx::ValueInfoProto& in : graph.input()) {
    if (!in.type().has_tensor_type() || !in.type().tensor_type().has_shape()) {
      continue;
    }
    for (const auto& d : in.type().tensor_type().shape().dim()) {
      if (d.has_dim_param() && !d.dim_param().empty()) {
        (*names)[d.dim_param()] = 1;
      }
    }
  }
}

// Folds `graph`, at `path` (DimSource::scope) in the model, whose
// enclosing graphs' inputs have dims `outer` (a body's own inputs' dims
// size its values too).
absl::StatusOr<int> Fold(onnx::GraphProto* graph, const Scope* parent,
                         bool iterates, int64_t opset,
                         const InputDimNames& outer, const std::string& path,
                         int depth, int64_t* budget) {
  if (depth > kMaxSubgraphDepth) return 0;  // The importer refuses these.
  InputDimNames inputs = outer;
  AddInputDimNames(*graph, &inputs);
  Scope scope(*graph, parent, iterates);
  absl::flat_hash_set<std::string> outputs;
  for (const onnx::ValueInfoProto& out : graph->output()) {
    outputs.insert(out.name());
  }
  // Where each value's type is declared, to record the folded ones' (the
  // fold that runs after the import helper's may go further than it did).
  absl::flat_hash_map<std::string, onnx::TypeProto*> types;
  for (onnx::ValueInfoProto& vi : *graph->mutable_value_info()) {
    types[vi.name()] = vi.mutable_type();
  }
  for (onnx::ValueInfoProto& vi : *graph->mutable_output()) {
    types[vi.name()] = vi.mutable_type();
  }
  types.erase("");
  auto declare = [&](const std::string& name) {
    onnx::ValueInfoProto* vi = graph->add_value_info();
    vi->set_name(name);
    return vi->mutable_type();
  };
  int folded = 0;
  Renames renames;
  for (onnx::NodeProto& node : *graph->mutable_node()) {
    for (const std::string& out : node.output()) {
      if (auto it = types.find(out); it != types.end()) {
        ApplyRenames(renames, it->second);
      }
    }
    if (!IsDefaultDomain(node.domain())) continue;
    bool has_subgraphs = false;
    for (onnx::AttributeProto& attr : *node.mutable_attribute()) {
      if (attr.type() != onnx::AttributeProto::GRAPH) continue;
      has_subgraphs = true;
      const std::string inner_path = absl::StrCat(
          path, "/", node.output_size() > 0 ? node.output(0) : node.name(), ":",
          attr.name());
      GLINT_ASSIGN_OR_RETURN(
          int inner, Fold(attr.mutable_g(), &scope, Iterates(node), opset,
                          inputs, inner_path, depth + 1, budget));
      folded += inner;
    }
    // A value computed from one that varies per iteration varies too.
    bool variant = false;
    for (const std::string& in : node.input()) {
      variant = variant || (!in.empty() && scope.IsVariant(in));
    }
    if (variant) {
      for (const std::string& out : node.output()) scope.MarkVariant(out);
      continue;
    }
    if (has_subgraphs) {
      // An If whose condition the fold knows takes its branch's types;
      // else its dims are named where its branches' are.
      if (node.op_type() == "If" &&
          (TypeIfByItsCondition(node, scope, &types, declare) ||
           NameDerivedDims(node, scope, path, opset, inputs, &types,
                           &renames))) {
        ++folded;
      }
      continue;
    }
    if (node.op_type() == "Constant") {
      if (node.output_size() == 1) {
        std::optional<FoldValue> v = ConstantNodeValue(node);
        if (v.has_value()) scope.Learn(node.output(0), *std::move(v));
      }
      continue;
    }
    if (*budget <= 0) continue;
    *budget -= 1;
    for (const std::string& in : node.input()) {
      if (const FoldValue* v = scope.Find(in)) *budget -= v->size();
    }
    std::optional<FoldValue> value = Evaluate(node, scope, opset, inputs);
    if (!value.has_value() && node.op_type() == "Range" &&
        NameRangeLength(node, scope, &types, declare)) {
      ++folded;
    }
    if (!value.has_value() &&
        NameDerivedDims(node, scope, path, opset, inputs, &types, &renames)) {
      ++folded;
    }
    if (!value.has_value() || CountOf(value->dims) != value->size()) continue;
    *budget -= value->size();
    if (outputs.contains(node.output(0)) || !value->complete()) {
      scope.Learn(node.output(0), *std::move(value));
      continue;
    }
    MakeConstant(*value, &node);
    onnx::TypeProto*& type = types[node.output(0)];
    if (type == nullptr) type = declare(node.output(0));
    SetType(*value, type);
    scope.Learn(node.output(0), *std::move(value));
    ++folded;
  }
  return folded;
}

void ForgetUnsizableDimNames(const InputDimNames& inputs,
                             onnx::TypeProto* type) {
  if (!type->has_tensor_type() || !type->tensor_type().has_shape()) return;
  for (auto& d : *type->mutable_tensor_type()->mutable_shape()->mutable_dim()) {
    if (d.has_dim_param() && (IsInventedDimName(d.dim_param()) ||
                              !EvaluateDim(d.dim_param(), inputs))) {
      d.clear_dim_param();
    }
  }
}

void ForgetUnsizableDimNames(onnx::GraphProto* graph, InputDimNames inputs,
                             int depth) {
  if (depth > kMaxSubgraphDepth) return;  // The importer refuses these.
  // A body's own inputs' dims size its values too.
  AddInputDimNames(*graph, &inputs);
  for (onnx::ValueInfoProto& vi : *graph->mutable_value_info()) {
    ForgetUnsizableDimNames(inputs, vi.mutable_type());
  }
  for (onnx::ValueInfoProto& vi : *graph->mutable_output()) {
    ForgetUnsizableDimNames(inputs, vi.mutable_type());
  }
  for (onnx::NodeProto& node : *graph->mutable_node()) {
    for (onnx::AttributeProto& attr : *node.mutable_attribute()) {
      if (attr.type() == onnx::AttributeProto::GRAPH) {
        ForgetUnsizableDimNames(attr.mutable_g(), inputs, depth + 1);
      }
    }
  }
}

}  // namespace

void ForgetUnsizableDimNames(onnx::GraphProto* graph) {
  ForgetUnsizableDimNames(graph, InputDimNames(), 0);
}

absl::StatusOr<int> FoldShapeArithmetic(onnx::GraphProto* graph,
                                        int64_t opset) {
  int64_t budget = kFoldBudget;
  return Fold(graph, nullptr, /*iterates=*/false, opset, InputDimNames(),
              /*path=*/"", 0, &budget);
}

}  // namespace glint::onnx_internal
