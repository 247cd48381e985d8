//===- GraphFolds.cpp - folders of graph ops ------------------------------===//
//
// Folding of no-op data movement (identity reshapes, transposes, casts,
// expands, zero-ratio dropout), composition of chained reshapes and
// transposes, constant folding of integer shape arithmetic (the values
// that flow through ONNX shape subgraphs), and matrix transposes absorbed
// by GEMM's transpose flags (a transposed copy costs a pass over memory;
// the flag costs nothing).
//
//===----------------------------------------------------------------------===//
#include "dialects/graph/GraphOps.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/TypeUtilities.h"

using namespace mlir;
using namespace trainc::graph;

/// Integer constant values of `attr` when it is a dense integer tensor.
static std::optional<SmallVector<APInt>> intValues(Attribute attr) {
  auto dense = dyn_cast_or_null<DenseIntElementsAttr>(attr);
  if (!dense)
    return std::nullopt;
  return SmallVector<APInt>(dense.getValues<APInt>());
}

static bool isSplatOf(Attribute attr, double value) {
  if (auto dense = dyn_cast_or_null<DenseFPElementsAttr>(attr))
    return dense.isSplat() && dense.getSplatValue<APFloat>().isExactlyValue(value);
  if (auto dense = dyn_cast_or_null<DenseIntElementsAttr>(attr))
    return dense.isSplat() &&
           dense.getSplatValue<APInt>().getSExtValue() ==
               static_cast<int64_t>(value);
  return false;
}

/// Applies `compute` elementwise to two integer constants whose shapes are
/// equal or where one side is a splat; the common shape-arithmetic cases.
template <typename Compute>
static Attribute foldIntBinary(Attribute lhs, Attribute rhs, Type resultType,
                               Compute compute) {
  auto lhsValues = intValues(lhs), rhsValues = intValues(rhs);
  auto type = dyn_cast<RankedTensorType>(resultType);
  if (!lhsValues || !rhsValues || !type || !type.hasStaticShape())
    return {};
  int64_t n = type.getNumElements();
  auto at = [n](const SmallVector<APInt> &values, int64_t i) -> const APInt * {
    if (values.size() == 1)
      return &values[0];
    return static_cast<int64_t>(values.size()) == n ? &values[i] : nullptr;
  };
  SmallVector<APInt> result;
  for (int64_t i = 0; i < n; ++i) {
    const APInt *a = at(*lhsValues, i), *b = at(*rhsValues, i);
    if (!a || !b)
      return {};
    std::optional<APInt> value = compute(*a, *b);
    if (!value)
      return {};
    result.push_back(*value);
  }
  return DenseIntElementsAttr::get(type, result);
}

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValueAttr(); }

OpFoldResult IdentityOp::fold(FoldAdaptor) { return getInput(); }

OpFoldResult NegOp::fold(FoldAdaptor adaptor) {
  auto values = intValues(adaptor.getInput());
  if (!values)
    return {};
  for (APInt &value : *values)
    value.negate();
  return DenseIntElementsAttr::get(getType(), *values);
}

OpFoldResult DropoutOp::fold(FoldAdaptor) {
  return getRatio().isZero() ? getInput() : OpFoldResult();
}

bool trainc::graph::widensExactly(Type from, Type to) {
  auto narrow = dyn_cast<FloatType>(from);
  auto wide = dyn_cast<FloatType>(to);
  return narrow && wide &&
         APFloat::isRepresentableBy(narrow.getFloatSemantics(),
                                    wide.getFloatSemantics());
}

OpFoldResult CastOp::fold(FoldAdaptor adaptor) {
  if (getInput().getType() == getType())
    return getInput();
  // cast(cast(x, B), C) is cast(x, C) when x widens to B exactly; with
  // C = x's type that is x itself (bf16 -> f32 -> bf16).
  if (auto inner = getInput().getDefiningOp<CastOp>()) {
    Value source = inner.getInput();
    if (widensExactly(mlir::getElementTypeOrSelf(source.getType()),
                      mlir::getElementTypeOrSelf(inner.getType()))) {
      if (source.getType() == getType())
        return source;
      getInputMutable().assign(source);
      return getResult();
    }
  }
  // Float constants between float types, rounded to nearest even.
  auto floats = dyn_cast_or_null<DenseFPElementsAttr>(adaptor.getInput());
  auto toFloat = dyn_cast<FloatType>(getType().getElementType());
  if (floats && toFloat) {
    return floats.mapValues(toFloat, [&](const APFloat &value) {
      APFloat rounded = value;
      bool lost;
      rounded.convert(toFloat.getFloatSemantics(), APFloat::rmNearestTiesToEven,
                      &lost);
      return rounded.bitcastToAPInt();
    });
  }
  auto values = intValues(adaptor.getInput());
  auto to = dyn_cast<IntegerType>(getType().getElementType());
  if (!values || !to)
    return {};
  for (APInt &value : *values)
    value = to.getWidth() == 1      ? APInt(1, !value.isZero())
            : value.getBitWidth() == 1 ? value.zext(to.getWidth()) // true is 1
                                       : value.sextOrTrunc(to.getWidth());
  return DenseIntElementsAttr::get(getType(), *values);
}

OpFoldResult AddOp::fold(FoldAdaptor adaptor) {
  if (getLhs().getType() == getType() && isSplatOf(adaptor.getRhs(), 0))
    return getLhs();
  if (getRhs().getType() == getType() && isSplatOf(adaptor.getLhs(), 0))
    return getRhs();
  return foldIntBinary(adaptor.getLhs(), adaptor.getRhs(), getType(),
                       [](const APInt &a, const APInt &b) {
                         return std::optional<APInt>(a + b);
                       });
}

OpFoldResult SubOp::fold(FoldAdaptor adaptor) {
  if (getLhs().getType() == getType() && isSplatOf(adaptor.getRhs(), 0))
    return getLhs();
  return foldIntBinary(adaptor.getLhs(), adaptor.getRhs(), getType(),
                       [](const APInt &a, const APInt &b) {
                         return std::optional<APInt>(a - b);
                       });
}

OpFoldResult MulOp::fold(FoldAdaptor adaptor) {
  if (getLhs().getType() == getType() && isSplatOf(adaptor.getRhs(), 1))
    return getLhs();
  if (getRhs().getType() == getType() && isSplatOf(adaptor.getLhs(), 1))
    return getRhs();
  return foldIntBinary(adaptor.getLhs(), adaptor.getRhs(), getType(),
                       [](const APInt &a, const APInt &b) {
                         return std::optional<APInt>(a * b);
                       });
}

OpFoldResult DivOp::fold(FoldAdaptor adaptor) {
  if (getLhs().getType() == getType() && isSplatOf(adaptor.getRhs(), 1))
    return getLhs();
  return foldIntBinary(adaptor.getLhs(), adaptor.getRhs(), getType(),
                       [](const APInt &a, const APInt &b) {
                         return b.isZero() ? std::nullopt
                                           : std::optional<APInt>(a.sdiv(b));
                       });
}

#define TRAINC_COMPARE_FOLD(OpName, predicate)                                 \
  OpFoldResult OpName::fold(FoldAdaptor adaptor) {                             \
    return foldIntBinary(adaptor.getLhs(), adaptor.getRhs(), getType(),        \
                         [](const APInt &a, const APInt &b) {                  \
                           return std::optional<APInt>(APInt(1, predicate));   \
                         });                                                   \
  }
TRAINC_COMPARE_FOLD(EqualOp, a == b)
TRAINC_COMPARE_FOLD(LessOp, a.slt(b))
TRAINC_COMPARE_FOLD(GreaterOp, a.sgt(b))
TRAINC_COMPARE_FOLD(LessEqualOp, a.sle(b))
TRAINC_COMPARE_FOLD(GreaterEqualOp, a.sge(b))
#undef TRAINC_COMPARE_FOLD

OpFoldResult ReshapeOp::fold(FoldAdaptor adaptor) {
  if (getInput().getType() == getType())
    return getInput();
  if (auto dense = dyn_cast_or_null<DenseElementsAttr>(adaptor.getInput()))
    return dense.reshape(getType());
  // reshape(reshape(x, s1), s2) == reshape(x, s2) unless s2 copies (0) a
  // dimension that s1 did not itself copy from x.
  auto inner = getInput().getDefiningOp<ReshapeOp>();
  if (!inner)
    return {};
  for (auto [i, entry] : llvm::enumerate(getShape()))
    if (entry == 0 && (i >= inner.getShape().size() || inner.getShape()[i] != 0))
      return {};
  getInputMutable().assign(inner.getInput());
  return getResult();
}

OpFoldResult TransposeOp::fold(FoldAdaptor adaptor) {
  ArrayRef<int64_t> perm = getPerm();
  bool identity = llvm::all_of(llvm::enumerate(perm), [](auto indexed) {
    return static_cast<int64_t>(indexed.index()) == indexed.value();
  });
  if (identity)
    return getInput();
  if (auto inner = getInput().getDefiningOp<TransposeOp>()) {
    // out[i] = mid[perm[i]] = x[innerPerm[perm[i]]]
    SmallVector<int64_t> composed;
    for (int64_t axis : perm)
      composed.push_back(inner.getPerm()[axis]);
    setPerm(composed);
    getInputMutable().assign(inner.getInput());
    return getResult();
  }
  return {};
}

/// Whether `value` is a 2-D matrix transpose; then its input.
static Value transposedMatrix(Value value) {
  auto transpose = value.getDefiningOp<TransposeOp>();
  if (!transpose || transpose.getPerm() != ArrayRef<int64_t>{1, 0})
    return {};
  return transpose.getInput();
}

namespace {
/// (op(A) op(B))^T = op(B)^T op(A)^T: a GEMM without c whose only reader
/// transposes it computes the transposed product instead.
struct TransposedGemm : OpRewritePattern<TransposeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(TransposeOp transpose,
                                PatternRewriter &rewriter) const override {
    auto gemm = transpose.getInput().getDefiningOp<GemmOp>();
    if (!gemm || gemm.getC() || !gemm->hasOneUse() ||
        transpose.getPerm() != ArrayRef<int64_t>{1, 0})
      return failure();
    rewriter.replaceOpWithNewOp<GemmOp>(
        transpose, gemm.getB(), gemm.getA(), Value(), gemm.getAlphaAttr(),
        gemm.getBetaAttr(), rewriter.getBoolAttr(!gemm.getTransB()),
        rewriter.getBoolAttr(!gemm.getTransA()));
    rewriter.eraseOp(gemm);
    return success();
  }
};
} // namespace

namespace {
/// Bits of a value's float elements, or 0 if they are not floats.
unsigned floatBits(Value value) {
  auto type = dyn_cast<FloatType>(mlir::getElementTypeOrSelf(value.getType()));
  return type ? type.getWidth() : 0;
}

/// A transpose moves its elements in the narrower of the two float types
/// around a conversion (--amp: half the bytes), and next to the product
/// that makes or reads them, where the product reads or writes it
/// transposed for free: transpose(cast(x)) is cast(transpose(x)) when the
/// cast widens (a bf16 weight gradient to the f32 of its parameter), and
/// cast(transpose(x)) is transpose(cast(x)) when it narrows (an f32
/// parameter to a bf16 product's operand). Conversions are elementwise,
/// so both orders give the same values.
struct TransposeBeforeWidening : OpRewritePattern<TransposeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(TransposeOp transpose,
                                PatternRewriter &rewriter) const override {
    auto cast = transpose.getInput().getDefiningOp<CastOp>();
    if (!cast || !cast->hasOneUse() || floatBits(cast.getInput()) == 0 ||
        floatBits(cast.getInput()) >= floatBits(cast.getOutput()))
      return failure();
    Value moved = TransposeOp::create(rewriter, transpose.getLoc(),
                                      cast.getInput(), transpose.getPerm());
    rewriter.replaceOpWithNewOp<CastOp>(transpose, moved, cast.getTo());
    rewriter.eraseOp(cast);
    return success();
  }
};

struct TransposeAfterNarrowing : OpRewritePattern<CastOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(CastOp cast,
                                PatternRewriter &rewriter) const override {
    auto transpose = cast.getInput().getDefiningOp<TransposeOp>();
    if (!transpose || !transpose->hasOneUse() ||
        floatBits(cast.getOutput()) == 0 ||
        floatBits(cast.getOutput()) >= floatBits(cast.getInput()))
      return failure();
    Value moved = CastOp::create(rewriter, cast.getLoc(), transpose.getInput(),
                                 cast.getTo());
    rewriter.replaceOpWithNewOp<TransposeOp>(cast, moved, transpose.getPerm());
    rewriter.eraseOp(transpose);
    return success();
  }
};
} // namespace

void TransposeOp::getCanonicalizationPatterns(RewritePatternSet &patterns,
                                              MLIRContext *context) {
  patterns.add<TransposedGemm, TransposeBeforeWidening>(context);
}

void CastOp::getCanonicalizationPatterns(RewritePatternSet &patterns,
                                         MLIRContext *context) {
  patterns.add<TransposeAfterNarrowing>(context);
}

/// A transposed operand becomes the transpose flag.
OpFoldResult GemmOp::fold(FoldAdaptor) {
  bool changed = false;
  if (Value a = transposedMatrix(getA())) {
    getAMutable().assign(a);
    setTransA(!getTransA());
    changed = true;
  }
  if (Value b = transposedMatrix(getB())) {
    getBMutable().assign(b);
    setTransB(!getTransB());
    changed = true;
  }
  return changed ? getResult() : OpFoldResult();
}

OpFoldResult ExpandOp::fold(FoldAdaptor adaptor) {
  if (getInput().getType() == getType())
    return getInput();
  if (auto dense = dyn_cast_or_null<SplatElementsAttr>(adaptor.getInput()))
    return DenseElementsAttr::get(getType(), dense.getSplatValue<Attribute>());
  return {};
}

OpFoldResult ConcatOp::fold(FoldAdaptor adaptor) {
  if (getInputs().size() == 1)
    return getInputs().front();
  if (getType().getRank() != 1)
    return {};
  SmallVector<APInt> result;
  for (Attribute input : adaptor.getInputs()) {
    auto values = intValues(input);
    if (!values)
      return {};
    llvm::append_range(result, *values);
  }
  return DenseIntElementsAttr::get(getType(), result);
}

OpFoldResult SliceOp::fold(FoldAdaptor adaptor) {
  if (getInput().getType() == getType() && getType().hasStaticShape() &&
      llvm::all_of(getSteps(), [](int64_t step) { return step == 1; }))
    return getInput();
  auto values = intValues(adaptor.getInput());
  if (!values || getType().getRank() != 1)
    return {};
  SmallVector<APInt> result;
  int64_t step = getSteps()[0];
  for (int64_t i = getStarts()[0]; step > 0 ? i < getEnds()[0] : i > getEnds()[0];
       i += step)
    result.push_back((*values)[i]);
  return DenseIntElementsAttr::get(getType(), result);
}

OpFoldResult GatherOp::fold(FoldAdaptor adaptor) {
  auto data = intValues(adaptor.getData());
  auto indices = intValues(adaptor.getIndices());
  if (!data || !indices || getData().getType().getRank() != 1)
    return {};
  int64_t size = static_cast<int64_t>(data->size());
  SmallVector<APInt> result;
  for (const APInt &index : *indices) {
    int64_t i = index.getSExtValue();
    if (i < 0)
      i += size;
    if (i < 0 || i >= size)
      return {};
    result.push_back((*data)[i]);
  }
  return DenseIntElementsAttr::get(getType(), result);
}
