//===- Kernels.cpp - the builtin kernel table -----------------------------===//
//
// Every graph op (but graph.dropout, which --trainc-autodiff turns into
// graph.random_mask) has a "reference" kernel; graph.matmul, graph.gemm
// and the three convolutions also have an "openblas" one; those, pooling
// and batch norm have a "dnnl" one (prepared when a session opens).
// runtime.copy copies a buffer byte for byte. The `mpi` backend's kernels
// (MpiKernels.cpp) are in libtrainc_rt_mpi.a, which only --data-parallel
// libraries link: registered when it is there.
//
//===----------------------------------------------------------------------===//
#include "lib/Runtime/kernels/KernelSupport.h"

namespace trainc::rt {

void registerBuiltinKernels() {
  registerElementwiseKernels();
  registerReductionKernels();
  registerTensorKernels();
  registerNeuralKernels();
  registerPoolingKernels();
  registerBackwardKernels();
  registerLossKernels();
  registerOptimizerKernels();
  registerOpenBlasKernels();
  registerDnnlKernels();
  if (registerMpiKernels)
    registerMpiKernels();
}

} // namespace trainc::rt
