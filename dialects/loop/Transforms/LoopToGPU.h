//===- LoopToGPU.h - how a loop nest runs on a GPU -------------*- C++ -*-===//
//
// --trainc-loop-to-gpu maps each loop.nest to a GPU kernel (one thread per
// point of its thread dimensions, see Passes.td). The code generator asks
// the same questions here to launch it: the grid and the block.
//
//===----------------------------------------------------------------------===//
#ifndef TRAINC_DIALECTS_LOOP_TRANSFORMS_LOOPTOGPU_H
#define TRAINC_DIALECTS_LOOP_TRANSFORMS_LOOPTOGPU_H

#include "dialects/loop/LoopOps.h"

#include "llvm/ADT/SmallVector.h"

#include <cstdint>

namespace trainc::loop {

/// The gpu.module holding the kernels.
inline constexpr llvm::StringLiteral kGpuModuleName = "trainc_kernels";

/// Threads per block of the generated GPU kernels (the pass's default).
inline constexpr int64_t kDefaultGpuBlockSize = 256;

/// How a nest runs on the GPU (--trainc-loop-to-gpu; the code generator
/// launches it with `blocks` x `threads`).
///
/// `threadDims` are the parallel dimensions every output indexes on an
/// axis of its own (c * d + k, c != 0): distinct points of them write
/// distinct elements. Empty when an output is also read through another
/// map (a thread could read what another writes). `loopDims` are the
/// others, in domain order.
///
/// By default each thread computes one point of the thread dimensions and
/// loops over `loopDims` (blocks of `min(points, blockSize)` threads).
/// With `blockReduction`, for nests with few points and a long reduction
/// (a bias gradient, a loss, batch-norm statistics), each block computes
/// one point: its threads share the loop domain, strided, and combine
/// their partial results (gpu.all_reduce). That needs every output indexed
/// by thread dimensions only, accumulated by one commutative, associative
/// operation (add, min, max) of its current value with the point's
/// contribution.
struct GpuSchedule {
  llvm::SmallVector<unsigned> threadDims, loopDims;
  bool blockReduction = false;
  int64_t blocks = 0, threads = 0; ///< blocks == 0: empty domain
};
GpuSchedule gpuSchedule(NestOp nest, int64_t blockSize = kDefaultGpuBlockSize);

} // namespace trainc::loop

#endif
