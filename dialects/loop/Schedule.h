//===- Schedule.h - the default schedule of a loop nest --------*- C++ -*-===//
#ifndef TRAINC_DIALECTS_LOOP_SCHEDULE_H
#define TRAINC_DIALECTS_LOOP_SCHEDULE_H

#include "dialects/loop/LoopOps.h"

namespace trainc::loop {

/// f32 lanes of the target's vector registers that the default schedule
/// aims at when no target is given: 16 (512-bit, AVX-512). `trainc compile`
/// passes its target's (8 on AVX2: 64-lane tiles would need 8 of its 16
/// registers per value and spill).
inline constexpr int64_t kDefaultVectorLanes = 16;
/// Elements per innermost tile: four vectors in flight.
inline constexpr int64_t innerTile(int64_t vectorLanes) {
  return 4 * vectorLanes;
}
/// Innermost dimensions shorter than this (but longer than 1) run as
/// scalar loops.
inline constexpr int64_t kMinVectorExtent = 4;
/// Rows of at most this many vectors that a nest over 3 dims reads in
/// another order than it writes them are moved in blocks of 4 x 2 rows.
inline constexpr int64_t kPermutedRowLanes = 2;
/// Nests with fewer points run on one thread (forking costs more).
inline constexpr int64_t kParallelPoints = 32768;

/// The schedule trainc gives a nest over `domain` whose operands are
/// indexed by `maps` (inputs, then the `numOutputs` outputs), for vectors
/// of `vectorLanes` f32:
///  * the innermost dimension is tiled by up to innerTile(vectorLanes)
///    elements (a multiple of vectorLanes) and
///    vectorized when every buffer either reads it contiguously (as its
///    last axis) or not at all, no map sums dimensions or steps
///    backwards, and it has 1 or at least kMinVectorExtent elements; other
///    dimensions have tiles of 1 (all of them when the nest is not
///    vectorized for its extent or a map sums dimensions: such nests run
///    as scalar loops);
///  * a vectorized nest over 3 dims whose rows (the innermost tile) are at
///    most kPermutedRowLanes vectors long and that reads an input's rows in
///    another order than it writes its output's (a transpose keeping the
///    innermost dim) tiles the input's row dimension by 4 and the output's
///    by 2, so that the rows of each block are read and written together;
///  * a nest whose buffers are all permutations of the domain (each dim
///    plus a constant at most), an input reading the innermost dimension
///    strided (a transpose moving it), is
///    vectorized in vectorLanes x vectorLanes tiles of the output's
///    innermost dimension and of the one that input reads contiguously
///    (transposed in registers);
///  * nests of at least kParallelPoints points split the outermost
///    parallel dimension that every output depends on, and that no map
///    sums with others, across threads.
ScheduleAttr defaultSchedule(mlir::MLIRContext *context,
                             llvm::ArrayRef<int64_t> domain,
                             llvm::ArrayRef<bool> isReduction,
                             llvm::ArrayRef<mlir::AffineMap> maps,
                             unsigned numOutputs,
                             int64_t vectorLanes = kDefaultVectorLanes);

} // namespace trainc::loop

#endif
