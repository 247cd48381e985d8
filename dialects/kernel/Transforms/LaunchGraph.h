//===- LaunchGraph.h - the order constraints between launches --*- C++ -*-===//
//
// The launches of one function and which must run before which: a launch
// may move past another unless both touch the same buffer (through views)
// and one of them writes it. --trainc-schedule-memory and
// --trainc-bucket-all-reduces reorder launches within these constraints.
//
//===----------------------------------------------------------------------===//
#ifndef TRAINC_DIALECTS_KERNEL_TRANSFORMS_LAUNCHGRAPH_H
#define TRAINC_DIALECTS_KERNEL_TRANSFORMS_LAUNCHGRAPH_H

#include "dialects/kernel/KernelOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallPtrSet.h"

#include <vector>

namespace trainc::kernel {

/// One launch, with the buffers it reads and writes (roots, deduplicated).
struct LaunchNode {
  LaunchOp launch;
  llvm::SmallSetVector<mlir::Value, 4> reads, writes;
  /// The arena buffers (kernel.alloc roots) it touches.
  llvm::SmallSetVector<mlir::Value, 4> arena;
};

struct LaunchGraph {
  /// The function's launches in their current order.
  std::vector<LaunchNode> nodes;
  /// Read after write, write after read, write after write: `successors[i]`
  /// must run after launch i, which has `predecessorCount[i]` predecessors.
  std::vector<llvm::SmallVector<size_t>> successors;
  std::vector<size_t> predecessorCount;
  llvm::DenseMap<mlir::Value, int64_t> bytes; ///< arena buffer -> its size
  /// arena buffer -> launches using it
  llvm::DenseMap<mlir::Value, size_t> userCount;

  /// Fails if the function holds an op other than kernel constants,
  /// allocs, views and launches, or a buffer is used by something other
  /// than launches and views.
  mlir::LogicalResult build(mlir::func::FuncOp function);

  /// Moves the function's ops into `order` (indices into nodes, a
  /// topological order): constants first, then each launch preceded by the
  /// allocs and views it is the first to use.
  void apply(mlir::func::FuncOp function, llvm::ArrayRef<size_t> order) const;
};

/// Moves the function's ops so that its launches run in `order` (every
/// launch of the function, a topological order): constants first, then
/// each launch preceded by the allocs and views it is the first to use.
void applyLaunchOrder(mlir::func::FuncOp function,
                      llvm::ArrayRef<LaunchOp> order);

/// The launch that writes `intermediate` (an alloc) when `reader` is its
/// only other user and nothing between them writes the writer's inputs,
/// so that the writer may move to the reader's place, or the reader read
/// the writer's inputs at its own; null otherwise.
LaunchOp soleWriter(mlir::Value intermediate, LaunchOp reader);

/// The buffers (view roots) a launch uses and writes, to move it past the
/// ops around it (--trainc-schedule-updates hoists optimizer updates,
/// --trainc-keep-weight-copies sinks them).
struct MovedLaunch {
  explicit MovedLaunch(LaunchOp launch);
  /// Whether `op` and the launch must keep their order: `op` writes a
  /// buffer the launch uses, reads one it writes, defines a value it uses,
  /// or is not a kernel op (constants, allocs and views never are).
  bool isOrderedWith(mlir::Operation *op) const;

  LaunchOp launch;
  llvm::SmallPtrSet<mlir::Value, 8> used, written;
};

} // namespace trainc::kernel

#endif
