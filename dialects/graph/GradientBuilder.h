//===- GradientBuilder.h - math on graph values, for gradients -*- C++ -*-===//
//
// A thin layer over OpBuilder so that gradient formulas read like the math
// (`b.mul(g, b.sub(b.scalar(1, y), b.mul(y, y)))` for tanh). Every method
// creates graph ops with inferred result types at the builder's position.
//
//===----------------------------------------------------------------------===//
#ifndef TRAINC_DIALECTS_GRAPH_GRADIENTBUILDER_H
#define TRAINC_DIALECTS_GRAPH_GRADIENTBUILDER_H

#include "dialects/graph/GraphOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/TypeUtilities.h"

namespace trainc::graph {

class GradientBuilder {
public:
  GradientBuilder(mlir::OpBuilder &builder, mlir::Location loc)
      : b(builder), loc(loc) {}

  mlir::OpBuilder &builder() { return b; }
  mlir::Location location() const { return loc; }

  /// A 0-d constant of `like`'s element type (broadcasts in arithmetic).
  mlir::Value scalar(double value, mlir::Value like);
  /// A zero tensor of `type` (a splat constant).
  mlir::Value zeros(mlir::Type type);

  mlir::Value add(mlir::Value a, mlir::Value b);
  mlir::Value sub(mlir::Value a, mlir::Value b);
  mlir::Value mul(mlir::Value a, mlir::Value b);
  mlir::Value div(mlir::Value a, mlir::Value b);
  mlir::Value neg(mlir::Value a);
  mlir::Value exp(mlir::Value a);
  mlir::Value log(mlir::Value a);
  mlir::Value sqrt(mlir::Value a);
  mlir::Value tanh(mlir::Value a);
  mlir::Value erf(mlir::Value a);
  mlir::Value sin(mlir::Value a);
  mlir::Value cos(mlir::Value a);
  mlir::Value sigmoid(mlir::Value a);
  mlir::Value pow(mlir::Value a, mlir::Value b);
  mlir::Value greater(mlir::Value a, mlir::Value b);
  mlir::Value less(mlir::Value a, mlir::Value b);
  mlir::Value greaterEqual(mlir::Value a, mlir::Value b);
  mlir::Value lessEqual(mlir::Value a, mlir::Value b);
  mlir::Value equal(mlir::Value a, mlir::Value b);
  mlir::Value where(mlir::Value condition, mlir::Value a, mlir::Value b);
  /// Converts `a` to `elementType` (a bool mask becomes 0/1).
  mlir::Value cast(mlir::Value a, mlir::Type elementType);

  mlir::Value reshape(mlir::Value a, llvm::ArrayRef<int64_t> shape);
  mlir::Value transpose(mlir::Value a, llvm::ArrayRef<int64_t> perm);
  /// Swaps the last two dims.
  mlir::Value transposeLastTwo(mlir::Value a);
  mlir::Value expand(mlir::Value a, llvm::ArrayRef<int64_t> shape);
  mlir::Value reduceSum(mlir::Value a, llvm::ArrayRef<int64_t> axes,
                        bool keepdims);
  /// The sum of every element, as a rank-0 tensor.
  mlir::Value sumAll(mlir::Value a);
  mlir::Value matmul(mlir::Value a, mlir::Value b);
  /// op(a) op(b) of two matrices, op transposing where asked.
  mlir::Value gemm(mlir::Value a, mlir::Value b, bool transA, bool transB);

  /// Sums a broadcast gradient back to `type`'s shape (leading dims that
  /// broadcasting added, and dims where `type` has size 1).
  mlir::Value reduceTo(mlir::Value gradient, mlir::Type type);

  /// Creates `OpTy` from operands and attributes with inferred types.
  template <typename OpTy>
  OpTy create(mlir::ValueRange operands,
              llvm::ArrayRef<mlir::NamedAttribute> attributes = {}) {
    return OpTy::create(b, loc, operands, attributes);
  }
  mlir::NamedAttribute attr(llvm::StringRef name, mlir::Attribute value) {
    return b.getNamedAttr(name, value);
  }

private:
  mlir::OpBuilder &b;
  mlir::Location loc;
};

} // namespace trainc::graph

#endif // TRAINC_DIALECTS_GRAPH_GRADIENTBUILDER_H
