//===- RematModel.h - The memory model --trainc-remat plans with -*- C++
//-*-===//
//
// What the greedy (Remat.cpp) and the exact solver (RematIlp.cpp) of
// --trainc-remat share: the live bytes of a function's values in op
// order, which ops may be recomputed, and at what cost.
//
//===----------------------------------------------------------------------===//
#ifndef TRAINC_GRAPH_TRANSFORMS_REMATMODEL_H
#define TRAINC_GRAPH_TRANSFORMS_REMATMODEL_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

#include <optional>
#include <vector>

namespace trainc::graph::remat {

/// How many ops a recomputed chain may have (16 against 8: the
/// Transformer's smallest arena at batch 16, 14.99 -> 14.68 MB; 32 gains
/// nothing more there and 3 % on ResNet-18).
constexpr int kMaxChain = 16;

/// The bytes a value takes in the arena (a boolean takes a byte).
int64_t bytesOf(mlir::Value value);

/// A reshape only views its input's buffer.
bool isView(mlir::Operation *op);

/// The forward pass: the ops the loss depends on (the function's result
/// whose role is "loss"; every op where there is none).
llvm::DenseSet<mlir::Operation *> forwardOps(mlir::func::FuncOp function);

/// Ops a chain may recompute: forward graph ops without side effects or
/// regions that declare a cost.
bool recomputable(mlir::Operation *op,
                  const llvm::DenseSet<mlir::Operation *> &forward);

/// The op's flops (CostOpInterface; 0 where it has no estimate).
double flopsOf(mlir::Operation *op);

/// Liveness of one function's values in op order: a value lives from its
/// op to its last reader; a reshape is a view of its input, which lives as
/// long as the view; a returned gradient dies where it is made (its
/// optimizer update runs right after it: --trainc-schedule-updates);
/// arguments and constants take no arena space.
class Liveness {
public:
  explicit Liveness(mlir::func::FuncOp function);

  int64_t endOf(mlir::Value value) const;
  int64_t positionOf(mlir::Operation *op) const { return position.lookup(op); }
  int64_t sizeOf(mlir::Value value) const { return sizes.lookup(value); }

  /// The live bytes at each op (made at or before it, read at or after).
  std::vector<int64_t> liveBytes() const;

  /// The first op where the live bytes peak, those bytes, and at how many
  /// ops they are reached.
  struct Peak {
    int64_t at = 0, bytes = 0, count = 0;
    /// Lower: fewer bytes, or as many at fewer ops.
    bool operator<(const Peak &other) const {
      return bytes != other.bytes ? bytes < other.bytes : count < other.count;
    }
  };
  Peak peak() const;

  /// The values live across op `at` (made before it, read after it) and
  /// not read by it, in program order.
  llvm::SmallVector<mlir::Value> liveAcross(int64_t at) const;

  /// The first reader of `value` after op `at` (a value read after the
  /// peak only through a view made before it has none: not recomputed).
  mlir::Operation *firstReaderAfter(mlir::Value value, int64_t at) const;

  std::vector<mlir::Operation *> ops;

private:
  llvm::DenseMap<mlir::Operation *, int64_t> position;
  llvm::DenseMap<mlir::Value, int64_t> ends;
  llvm::DenseMap<mlir::Value, int64_t> sizes;
};

/// What the exact solver did.
struct IlpOutcome {
  /// The live bytes' peak the model promises (an upper bound: a
  /// recomputed chain's intermediates are counted as live together).
  int64_t modelPeak = 0;
  int64_t recomputedOps = 0;
  double flops = 0;
  /// Proven optimal, not cut short by a limit.
  bool optimal = false;
  /// Branch-and-bound nodes of every solve.
  int64_t nodes = 0;
  double seconds = 0;
};

/// CBC's limits per solve. The node limit binds first on the reference
/// models, so their plans are the same on every machine; the time limit
/// is a safety net for larger graphs.
struct IlpLimits {
  int64_t nodes = 700;
  double seconds = 30;
};

/// Recomputes values of `function` chosen by an integer program (CBC):
/// the fewest recomputed flops that bring the peak to `target`, or, where
/// no choice does, the lowest peak and then the fewest flops. Changes
/// nothing and returns nullopt if the solver finds no solution within
/// `limits`. `timedOut`: a solve stopped at the time limit (not the node
/// limit), so the answer may differ on a slower or busier machine.
std::optional<IlpOutcome> rematByIlp(mlir::func::FuncOp function,
                                     int64_t target, const IlpLimits &limits,
                                     bool &timedOut);

} // namespace trainc::graph::remat

#endif // TRAINC_GRAPH_TRANSFORMS_REMATMODEL_H
