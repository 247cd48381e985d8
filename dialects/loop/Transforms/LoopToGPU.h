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

/// The parallel dimensions of `nest` that every output indexes on an axis
/// of its own (c * d + k, c != 0): distinct points of them write distinct
/// elements, so each gets a thread. The other dimensions are loops inside
/// the thread, in domain order. Empty when an output is also read through
/// another map (a thread could read what another writes).
llvm::SmallVector<unsigned> gpuThreadDims(NestOp nest);

/// The launch of `nest`'s kernel: `blocks` blocks of `threads` threads
/// (blocks == 0: the domain is empty, nothing to launch).
struct GpuLaunchShape {
  int64_t blocks = 0, threads = 0;
};
GpuLaunchShape gpuLaunchShape(NestOp nest,
                              int64_t blockSize = kDefaultGpuBlockSize);

} // namespace trainc::loop

#endif
