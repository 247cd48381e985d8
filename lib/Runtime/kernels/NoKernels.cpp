//===- NoKernels.cpp - the kernel table of the CUDA runtime ---------------===//
//
// libtrainc_rt_cuda.a, which --target cuda libraries link, has no host
// kernels: every launch of such a library is a generated GPU kernel, and
// the library must not need oneDNN or OpenBLAS where it runs.
//
//===----------------------------------------------------------------------===//
#include "lib/Runtime/kernels/KernelSupport.h"

namespace trainc::rt {

void registerBuiltinKernels() {}

} // namespace trainc::rt
