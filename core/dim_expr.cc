#include "core/dim_expr.h"

#include <algorithm>
#include <memory>
#include <numeric>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace glint {
namespace {

// Every constant and every value on the way stays within ±kLimit
// (checked at each step), so sizes of a few such dims stay in range.
constexpr int64_t kLimit = int64_t{1} << 62;
// Parentheses nest at most this deep (the parser recurses per level).
constexpr int kMaxDepth = 32;

struct Expr {
  // kBounded: a size the data decides, `name`, at most `left`.
  enum class Kind { kNumber, kName, kAdd, kSub, kMul, kDiv, kBounded };
  Kind kind = Kind::kNumber;
  int64_t number = 0;
  std::string name;
  std::unique_ptr<Expr> left, right;
};

using ExprPtr = std::unique_ptr<Expr>;

ExprPtr Leaf(int64_t number) {
  auto e = std::make_unique<Expr>();
  e->number = number;
  return e;
}

ExprPtr Binary(Expr::Kind kind, ExprPtr left, ExprPtr right) {
  auto e = std::make_unique<Expr>();
  e->kind = kind;
  e->left = std::move(left);
  e->right = std::move(right);
  return e;
}

bool IsNameStart(char c) { return absl::ascii_isalpha(c) || c == '_'; }
bool IsNameChar(char c) { return absl::ascii_isalnum(c) || c == '_'; }

// Recursive descent over the grammar in dim_expr.h. No whitespace.
class Parser {
 public:
  explicit Parser(absl::string_view text) : text_(text) {}

  ExprPtr ParseAll() {
    if (text_.empty() || text_.size() > kMaxDimExprLength) return nullptr;
    std::optional<size_t> name_end = BoundedAhead();
    ExprPtr e =
        name_end.has_value() ? ParseBounded(*name_end, 0) : ParseExpr(0);
    return e != nullptr && pos_ == text_.size() ? std::move(e) : nullptr;
  }

 private:
  bool Take(char c) {
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }

  // Where a bounded dim starts here (a name, then "<="): the name's end.
  std::optional<size_t> BoundedAhead() const {
    size_t end = pos_;
    if (end >= text_.size() || !IsNameStart(text_[end])) return std::nullopt;
    while (end < text_.size() && IsNameChar(text_[end])) ++end;
    if (text_.substr(end, 2) != "<=") return std::nullopt;
    return end;
  }

  // name '<=' expr, the name ending at `name_end` (BoundedAhead).
  ExprPtr ParseBounded(size_t name_end, int depth) {
    auto e = std::make_unique<Expr>();
    e->kind = Expr::Kind::kBounded;
    e->name = std::string(text_.substr(pos_, name_end - pos_));
    pos_ = name_end + 2;
    e->left = ParseExpr(depth);
    return e->left != nullptr ? std::move(e) : nullptr;
  }

  ExprPtr ParseExpr(int depth) {
    ExprPtr left = ParseTerm(depth);
    while (left != nullptr) {
      Expr::Kind kind;
      if (Take('+')) {
        kind = Expr::Kind::kAdd;
      } else if (Take('-')) {
        kind = Expr::Kind::kSub;
      } else {
        break;
      }
      ExprPtr right = ParseTerm(depth);
      if (right == nullptr) return nullptr;
      left = Binary(kind, std::move(left), std::move(right));
    }
    return left;
  }

  ExprPtr ParseTerm(int depth) {
    ExprPtr left = ParseFactor(depth);
    while (left != nullptr) {
      Expr::Kind kind;
      if (Take('*')) {
        kind = Expr::Kind::kMul;
      } else if (Take('/')) {
        kind = Expr::Kind::kDiv;
      } else {
        break;
      }
      ExprPtr right = ParseFactor(depth);
      if (right == nullptr) return nullptr;
      // Only a positive integer divides: the value stays a floor division
      // that grows with its dividend.
      if (kind == Expr::Kind::kDiv &&
          (right->kind != Expr::Kind::kNumber || right->number <= 0)) {
        return nullptr;
      }
      left = Binary(kind, std::move(left), std::move(right));
    }
    return left;
  }

  ExprPtr ParseFactor(int depth) {
    if (pos_ >= text_.size()) return nullptr;
    if (Take('(')) {
      if (depth >= kMaxDepth) return nullptr;
      std::optional<size_t> name_end = BoundedAhead();
      ExprPtr e = name_end.has_value() ? ParseBounded(*name_end, depth + 1)
                                       : ParseExpr(depth + 1);
      return e != nullptr && Take(')') ? std::move(e) : nullptr;
    }
    const char c = text_[pos_];
    if (absl::ascii_isdigit(c)) {
      int64_t n = 0;
      while (pos_ < text_.size() && absl::ascii_isdigit(text_[pos_])) {
        const int digit = text_[pos_++] - '0';
        if (n > (kLimit - digit) / 10) return nullptr;
        n = n * 10 + digit;
      }
      return Leaf(n);
    }
    if (!IsNameStart(c)) return nullptr;
    const size_t start = pos_;
    while (pos_ < text_.size() && IsNameChar(text_[pos_])) ++pos_;
    auto e = std::make_unique<Expr>();
    e->kind = Expr::Kind::kName;
    e->name = std::string(text_.substr(start, pos_ - start));
    return e;
  }

  absl::string_view text_;
  size_t pos_ = 0;
};

ExprPtr Parse(absl::string_view text) { return Parser(text).ParseAll(); }

int64_t FloorDiv(int64_t a, int64_t b) {
  const int64_t q = a / b;
  return (a % b != 0 && a < 0) ? q - 1 : q;
}

// a + b, a - b and a * b, where they stay within ±kLimit.
std::optional<int64_t> InRange(bool overflowed, int64_t v) {
  if (overflowed || v > kLimit || v < -kLimit) return std::nullopt;
  return v;
}
std::optional<int64_t> Add(int64_t a, int64_t b) {
  int64_t v;
  const bool overflowed = __builtin_add_overflow(a, b, &v);
  return InRange(overflowed, v);
}
std::optional<int64_t> Sub(int64_t a, int64_t b) {
  int64_t v;
  const bool overflowed = __builtin_sub_overflow(a, b, &v);
  return InRange(overflowed, v);
}
std::optional<int64_t> Mul(int64_t a, int64_t b) {
  int64_t v;
  const bool overflowed = __builtin_mul_overflow(a, b, &v);
  return InRange(overflowed, v);
}

std::optional<int64_t> Evaluate(const Expr& e,
                                const std::map<std::string, int64_t>& values) {
  using K = Expr::Kind;
  if (e.kind == K::kNumber) return e.number;
  // A bounded dim is its bound: the most a run takes. A bound below 0 (a
  // difference, at bounds where no run has that dim) is not clamped here
  // but where EvaluateDim ends, as DimUpperBound writes it.
  if (e.kind == K::kBounded) return Evaluate(*e.left, values);
  if (e.kind == K::kName) {
    auto it = values.find(e.name);
    if (it == values.end() || it->second < 0 || it->second > kLimit) {
      return std::nullopt;
    }
    return it->second;
  }
  std::optional<int64_t> l = Evaluate(*e.left, values);
  std::optional<int64_t> r = Evaluate(*e.right, values);
  if (!l.has_value() || !r.has_value()) return std::nullopt;
  switch (e.kind) {
    case K::kAdd:
      return Add(*l, *r);
    case K::kSub:
      return Sub(*l, *r);
    case K::kMul:
      return Mul(*l, *r);
    case K::kDiv:
      if (*r <= 0) return std::nullopt;
      return FloorDiv(*l, *r);
    default:
      return std::nullopt;
  }
}

int Precedence(const Expr& e) {
  switch (e.kind) {
    case Expr::Kind::kAdd:
    case Expr::Kind::kSub:
      return 1;
    case Expr::Kind::kMul:
    case Expr::Kind::kDiv:
      return 2;
    default:
      return 3;
  }
}

// `e` as text, in parentheses where its context (`min_precedence`) binds
// tighter.
std::string Print(const Expr& e, int min_precedence = 0) {
  using K = Expr::Kind;
  std::string text;
  switch (e.kind) {
    case K::kNumber:
      return absl::StrCat(e.number);
    case K::kName:
      return e.name;
    case K::kBounded:
      // Parenthesised as an operand: 4*(nonzero_1<=3*h).
      // A bound that is itself bounded keeps its parentheses:
      // t<=(u<=5), never t<=u<=5.
      text = absl::StrCat(
          e.name, "<=", Print(*e.left, e.left->kind == K::kBounded ? 1 : 0));
      return min_precedence > 0 ? absl::StrCat("(", text, ")") : text;
    default: {
      const int p = Precedence(e);
      const char* op = e.kind == K::kAdd   ? "+"
                       : e.kind == K::kSub ? "-"
                       : e.kind == K::kMul ? "*"
                                           : "/";
      // Left-associative: the right operand of the same precedence keeps
      // its parentheses (a-(b-c), a*(b/2)).
      text = absl::StrCat(Print(*e.left, p), op, Print(*e.right, p + 1));
      return p < min_precedence ? absl::StrCat("(", text, ")") : text;
    }
  }
}

bool IsNumber(const Expr& e) { return e.kind == Expr::Kind::kNumber; }

void CollectFactors(const Expr& e, DimProduct* out, bool* ok) {
  if (e.kind == Expr::Kind::kMul) {
    CollectFactors(*e.left, out, ok);
    CollectFactors(*e.right, out, ok);
  } else if (IsNumber(e)) {
    std::optional<int64_t> c = Mul(out->coefficient, e.number);
    if (!c.has_value()) *ok = false;
    out->coefficient = c.value_or(0);
  } else {
    out->factors.push_back(Print(e));
  }
}

// Replaces each bounded dim in `e` by its bound.
void ReplaceBounded(ExprPtr& e) {
  while (e->kind == Expr::Kind::kBounded) e = std::move(e->left);
  if (e->left != nullptr) ReplaceBounded(e->left);
  if (e->right != nullptr) ReplaceBounded(e->right);
}

bool HasBounded(const Expr& e) {
  return e.kind == Expr::Kind::kBounded ||
         (e.left != nullptr && HasBounded(*e.left)) ||
         (e.right != nullptr && HasBounded(*e.right));
}

}  // namespace

bool IsDimIdentifier(absl::string_view name) {
  if (name.empty() || name.size() > kMaxDimExprLength ||
      !IsNameStart(name[0])) {
    return false;
  }
  return std::all_of(name.begin(), name.end(), IsNameChar);
}

std::optional<int64_t> EvaluateDim(
    absl::string_view name, const std::map<std::string, int64_t>& values) {
  if (auto it = values.find(std::string(name)); it != values.end()) {
    return it->second;
  }
  ExprPtr e = Parse(name);
  if (e == nullptr) return std::nullopt;
  std::optional<int64_t> v = Evaluate(*e, values);
  // A size below 0 is one no run has (a kernel wider than the bounds'
  // image): nothing to hold.
  if (v.has_value() && *v < 0) return 0;
  return v;
}

std::optional<std::string> DimAffine(absl::string_view base, int64_t add,
                                     int64_t divisor) {
  if (divisor <= 0 || divisor > kLimit || add > kLimit || add < -kLimit) {
    return std::nullopt;
  }
  ExprPtr e = Parse(base);
  if (e == nullptr) return std::nullopt;
  // base = floor((inner + a) / m).
  int64_t m = 1, a = 0;
  if (e->kind == Expr::Kind::kDiv) {
    m = e->right->number;
    e = std::move(e->left);
  }
  if ((e->kind == Expr::Kind::kAdd || e->kind == Expr::Kind::kSub) &&
      IsNumber(*e->right)) {
    a = e->kind == Expr::Kind::kAdd ? e->right->number : -e->right->number;
    e = std::move(e->left);
  }
  // floor((floor((x + a) / m) + add) / d) = floor((x + a + add*m) / (m*d)).
  std::optional<int64_t> add_m = Mul(add, m);
  std::optional<int64_t> sum = add_m.has_value() ? Add(a, *add_m) : add_m;
  std::optional<int64_t> div = Mul(m, divisor);
  if (!sum.has_value() || !div.has_value()) return std::nullopt;
  int64_t total = *sum, divisor_total = *div;
  // floor((g*u) / (g*v)) = floor(u / v): a common factor of the inner
  // product's coefficient, the constant and the divisor goes
  // (64*batch/64 is batch).
  if (divisor_total > 1) {
    DimProduct product;
    bool ok = true;
    CollectFactors(*e, &product, &ok);
    const int64_t g =
        std::gcd(std::gcd(product.coefficient, total), divisor_total);
    if (ok && product.coefficient > 0 && g > 1) {
      product.coefficient /= g;
      total /= g;
      divisor_total /= g;
      std::sort(product.factors.begin(), product.factors.end());
      ExprPtr reduced = Parse(DimProductName(std::move(product)));
      if (reduced == nullptr) return std::nullopt;
      e = std::move(reduced);
    }
  }
  sum = total;
  div = divisor_total;
  ExprPtr x = std::move(e);
  if (*sum > 0) {
    x = Binary(Expr::Kind::kAdd, std::move(x), Leaf(*sum));
  } else if (*sum < 0) {
    x = Binary(Expr::Kind::kSub, std::move(x), Leaf(-*sum));
  }
  if (*div > 1) x = Binary(Expr::Kind::kDiv, std::move(x), Leaf(*div));
  std::string name = Print(*x);
  if (name.size() > kMaxDimExprLength) return std::nullopt;
  return name;
}

std::optional<DimProduct> DimFactors(absl::string_view name) {
  ExprPtr e = Parse(name);
  if (e == nullptr) return std::nullopt;
  DimProduct product;
  bool ok = true;
  CollectFactors(*e, &product, &ok);
  if (!ok) return std::nullopt;
  std::sort(product.factors.begin(), product.factors.end());
  return product;
}

std::string DimProductName(DimProduct product) {
  std::sort(product.factors.begin(), product.factors.end());
  std::vector<std::string> parts;
  if (product.coefficient != 1 || product.factors.empty()) {
    parts.push_back(absl::StrCat(product.coefficient));
  }
  const bool alone = product.coefficient == 1 && product.factors.size() == 1;
  for (const std::string& f : product.factors) {
    // A factor that is a sum or a quotient keeps its parentheses beside
    // others: ((h+1)/2)*batch.
    parts.push_back(alone || IsDimIdentifier(f) ? f
                                                : absl::StrCat("(", f, ")"));
  }
  return absl::StrJoin(parts, "*");
}

bool IsDimExpression(absl::string_view name) { return Parse(name) != nullptr; }

bool IsDataDependentDim(absl::string_view name) {
  ExprPtr e = Parse(name);
  return e != nullptr && HasBounded(*e);
}

std::optional<std::string> DimUpperBound(absl::string_view name) {
  ExprPtr e = Parse(name);
  if (e == nullptr) return std::nullopt;
  ReplaceBounded(e);
  return Print(*e);
}

std::optional<std::string> DimBounded(absl::string_view tag,
                                      absl::string_view bound) {
  if (!IsDimIdentifier(tag)) return std::nullopt;
  std::optional<std::string> flat = DimUpperBound(bound);
  if (!flat.has_value()) return std::nullopt;
  // A bound of sizes only is one size: 90*10125 is 911250.
  if (std::optional<int64_t> size = EvaluateDim(*flat, {})) {
    flat = absl::StrCat(*size);
  }
  std::string name = absl::StrCat(tag, "<=", *flat);
  if (name.size() > kMaxDimExprLength) return std::nullopt;
  return name;
}

std::optional<std::string> DimSum(const std::vector<std::string>& terms) {
  // Like products add up: (h+1)/2 + (h+1)/2 is 2*((h+1)/2).
  std::map<std::vector<std::string>, int64_t> sums;
  for (const std::string& term : terms) {
    std::optional<DimProduct> p = DimFactors(term);
    if (!p.has_value() || p->coefficient < 0) return std::nullopt;
    std::optional<int64_t> sum = Add(sums[p->factors], p->coefficient);
    if (!sum.has_value()) return std::nullopt;
    sums[p->factors] = *sum;
  }
  std::vector<std::string> parts;
  std::string constant;
  for (auto& [factors, coefficient] : sums) {
    if (coefficient == 0) continue;
    std::string part = DimProductName(DimProduct{coefficient, factors});
    if (ExprPtr e = Parse(part);
        e != nullptr && e->kind == Expr::Kind::kBounded) {
      part = absl::StrCat("(", part, ")");  // a+(t<=5), never a+t<=5.
    }
    if (factors.empty()) {
      constant = std::move(part);  // Last: h+3, not 3+h.
    } else {
      parts.push_back(std::move(part));
    }
  }
  if (!constant.empty()) parts.push_back(std::move(constant));
  if (parts.empty()) return "0";
  std::string name = absl::StrJoin(parts, "+");
  // Read back, so that every name given holds the grammar (a term that is
  // a difference keeps its meaning only as a whole: "a-b" joins as is).
  ExprPtr e = Parse(name);
  if (e == nullptr) return std::nullopt;
  return Print(*e);
}

}  // namespace glint
