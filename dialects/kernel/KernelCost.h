//===- KernelCost.h - what a kernel launch costs, estimated ----*- C++ -*-===//
//
// A first-order cost of each launch: the floating-point operations its op
// needs and the bytes it must move at least (every operand read or written
// once), as the op declares them (CostOpInterface). `trainc compile --stats`
// prints them, and `--profile` sets them beside measured times, so a user sees
// which kernels run far from the machine's compute or memory roof.
//
//===----------------------------------------------------------------------===//
#ifndef TRAINC_DIALECTS_KERNEL_KERNELCOST_H
#define TRAINC_DIALECTS_KERNEL_KERNELCOST_H

#include "dialects/kernel/KernelOps.h"

namespace trainc::kernel {

struct KernelCost {
  /// Multiply-adds count as two. Data movement counts nothing; other ops
  /// count one per element of their largest operand (a lower bound for
  /// exp, erf, ...).
  double flops = 0;
  /// Sum of the sizes of the inputs and outputs.
  double bytes = 0;
};

KernelCost estimateCost(LaunchOp launch);

} // namespace trainc::kernel

#endif
