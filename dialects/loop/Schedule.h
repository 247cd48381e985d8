//===- Schedule.h - the default schedule of a loop nest --------*- C++ -*-===//
#ifndef TRAINC_DIALECTS_LOOP_SCHEDULE_H
#define TRAINC_DIALECTS_LOOP_SCHEDULE_H

#include "dialects/loop/LoopOps.h"

namespace trainc::loop {

/// Vector lanes the default schedule aims at (one 512-bit register of f32;
/// narrower targets split each vector into several registers).
inline constexpr int64_t kVectorLanes = 16;
/// Elements per innermost tile: four vectors in flight.
inline constexpr int64_t kInnerTile = 4 * kVectorLanes;
/// Nests with fewer points run on one thread (forking costs more).
inline constexpr int64_t kParallelPoints = 32768;

/// The schedule trainc gives a nest over `domain` whose operands are
/// indexed by `maps` (inputs, then the `numOutputs` outputs):
///  * the innermost dimension is tiled by up to kInnerTile elements and
///    vectorized when every buffer either reads it contiguously (as its
///    last axis) or not at all; other dimensions have tiles of 1;
///  * nests of at least kParallelPoints points split the outermost
///    parallel dimension that every output depends on across threads.
ScheduleAttr defaultSchedule(mlir::MLIRContext *context,
                             llvm::ArrayRef<int64_t> domain,
                             llvm::ArrayRef<bool> isReduction,
                             llvm::ArrayRef<mlir::AffineMap> maps,
                             unsigned numOutputs);

} // namespace trainc::loop

#endif
