//===- Interpreter.h - the reference interpreter -------------*- C++ -*-===//
//
// Runs a function of graph (and func) ops on host tensors, one naive kernel
// per op. It is the oracle every lowering is tested against, not a product
// path: it favours obviously correct code over speed. Every value is
// computed in double; a result whose element type is narrower (f32, f16,
// bf16, integers) is rounded to that type once, after the op, so reductions,
// matmul and convolutions accumulate in double.
//
//===----------------------------------------------------------------------===//
#ifndef TRAINC_INTERPRETER_H
#define TRAINC_INTERPRETER_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Types.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <vector>

namespace mlir {
class MLIRContext;
namespace func {
class FuncOp;
} // namespace func
} // namespace mlir

namespace trainc {

/// The element types the interpreter (and the C API) knows.
enum class DType { F32, F64, F16, BF16, I64, I32, I16, I8, I1 };

/// A host tensor: dtype, shape and values. Every element is held as a
/// double (integers are exact up to 2^53; i1 is 0 or 1).
struct HostTensor {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::vector<double> data;

  int64_t numElements() const;
};

struct InterpreterOptions {
  /// Compute in double and do not round f32 results (for gradient checks and
  /// the fp64 oracle). Applies to every float type; integer results are
  /// still truncated and wrapped to their width.
  bool fp64 = false;
};

/// Runs `function` (graph + func ops; func.call to other functions of the
/// module is supported) on host tensors. Errors (wrong argument
/// count/shape/dtype, an op it cannot run) are llvm::Error naming the op and
/// its location.
llvm::Expected<std::vector<HostTensor>>
interpret(mlir::func::FuncOp function, llvm::ArrayRef<HostTensor> arguments,
          const InterpreterOptions &options = {});

/// True when the interpreter has a kernel for ops named `opName`
/// ("graph.conv"); func.call and func.return are always understood.
bool canInterpret(llvm::StringRef opName);

//===----------------------------------------------------------------------===//
// Conversions between host tensors and MLIR
//===----------------------------------------------------------------------===//

/// "f32", "i64", ... (MLIR's spelling).
llvm::StringRef dtypeName(DType dtype);
/// The DType of an MLIR element type; an error for any other type.
llvm::Expected<DType> dtypeOf(mlir::Type elementType);
/// The MLIR element type of `dtype`.
mlir::Type elementTypeOf(DType dtype, mlir::MLIRContext &context);
/// `value` rounded to `dtype`: to the nearest float of that format for
/// floats, truncated toward zero and wrapped to the width for integers,
/// 0 or 1 for i1.
double roundTo(DType dtype, double value);

/// The value of a dense elements attribute (e.g. graph.constant's value).
llvm::Expected<HostTensor> hostTensorFromAttr(mlir::ElementsAttr attr);
/// A dense elements attribute holding `tensor`.
mlir::DenseElementsAttr denseAttrOf(const HostTensor &tensor,
                                    mlir::MLIRContext &context);

} // namespace trainc

#endif // TRAINC_INTERPRETER_H
