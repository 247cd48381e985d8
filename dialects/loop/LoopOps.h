//===- LoopOps.h - the loop dialect ----------------------------*- C++ -*-===//
#ifndef TRAINC_DIALECTS_LOOP_LOOPOPS_H
#define TRAINC_DIALECTS_LOOP_LOOPOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dialects/loop/LoopDialect.h.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/loop/LoopAttrs.h.inc"

#define GET_OP_CLASSES
#include "dialects/loop/LoopOps.h.inc"

#include <optional>
#include <string>

namespace mlir {
class AffineExpr;
}

namespace trainc::loop {
/// Unit attribute on a func.func whose body is loop nests.
inline constexpr llvm::StringLiteral kKernelAttrName = "loop.kernel";
/// A CheckAttr on a loop kernel: the input check reported after it runs.
inline constexpr llvm::StringLiteral kCheckAttrName = "loop.check";

/// The function --trainc-lower-loop-nests makes of nest `index` of `kernel`:
///   void NAME(index begin, index end, <the kernel's buffers>)
/// computes blocks [begin, end) of the nest's parallel dimension.
std::string nestFunctionName(llvm::StringRef kernel, unsigned index);

/// A result of a loop.nest indexing map as what it must be: a linear
/// function of the domain's dimensions, sum(coefficients[d] * d) + constant.
struct AffineForm {
  llvm::SmallVector<int64_t> coefficients;
  int64_t constant = 0;

  /// The dimension of a form c * d + k with c != 0 (a plain or strided,
  /// offset dimension), if it is one.
  std::optional<unsigned> singleDim() const;
  /// Whether the form is a constant (no dimension).
  bool isConstant() const;
  /// The least and greatest value over the domain `domain` (no extent 0).
  std::pair<int64_t, int64_t> range(llvm::ArrayRef<int64_t> domain) const;
};

/// `expr`, over `numDims` dimensions, as a linear form, or nullopt if it is
/// not one (symbols, mod, floordiv, ceildiv, products of dimensions).
std::optional<AffineForm> getAffineForm(mlir::AffineExpr expr,
                                        unsigned numDims);

/// The row-major offset, in `type`'s elements, of the element `map` reads
/// (a linear map over `numDims` dimensions), as a linear form: how a
/// loop.nest's `wrapping_inputs` are bounded and read.
std::optional<AffineForm> getFlatForm(mlir::AffineMap map,
                                      mlir::MemRefType type);
} // namespace trainc::loop

#endif
