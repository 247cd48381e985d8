//===- Passes.td - conversions between trainc's dialects -----------------===//
#ifndef TRAINC_CONVERSION_PASSES_TD
#define TRAINC_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def KernelToLoopPass : Pass<"trainc-kernel-to-loop", "mlir::ModuleOp"> {
  let summary = "Generated-backend launches to loop-nest kernels";
  let description = [{
    For every `kernel.launch` whose backend is `generated`, builds a
    `loop.kernel` function of `loop.nest`s that computes it (one builder per
    graph op family, GeneratedKernels.cpp), gives each nest its default
    schedule, and sets the launch's `callee`. Buffers the kernel needs
    besides its outputs become `kernel.alloc`s passed as the launch's
    `scratch`, so the memory planner places them. The kernel function sees
    each buffer in the shape that suits it (unit dimensions dropped,
    contiguous dimensions merged): same element type and element count,
    since only its address crosses the call.
  }];
  let dependentDialects = ["::trainc::loop::LoopDialect",
                           "::trainc::kernel::KernelDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::func::FuncDialect"];
}

#endif // TRAINC_CONVERSION_PASSES_TD
