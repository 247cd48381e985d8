//===- CudaKernels.h - what the CUDA runtime's kernels share ---*- C++ -*-===//
//
// libtrainc_rt_cuda.a's library kernels: cuBLAS (CublasKernels.cpp, which
// holds the kernel table) and cuDNN (CudnnKernels.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef TRAINC_LIB_RUNTIME_KERNELS_CUDAKERNELS_H
#define TRAINC_LIB_RUNTIME_KERNELS_CUDAKERNELS_H

#include <cstdint>
#include <string>

namespace trainc::rt {

class CudaDevice;
struct Launch;

/// Whether every operand of `launch` is bf16 (`bf16` set) or every one f32;
/// else false with an error naming `library`'s kernels.
bool uniformF32OrBf16(const Launch &launch, const char *kernels, bool &bf16,
                      std::string &error);

/// Registers the convolutions on cuDNN (CudnnKernels.cpp).
void registerCudnnKernels();

/// A per-channel bias added on the device's cuBLAS, for the bf16
/// convolutions on cuDNN: out[n, c, p] += bias[c] over an [N, C, P] tensor
/// of bf16 (or f32), as one batched rank-1 update (bias x ones) per image,
/// accumulated in f32 and rounded once. prepareChannelBias opens cuBLAS
/// and sizes its ones when a session opens; addChannelBias runs it.
bool prepareChannelBias(CudaDevice *device, int64_t positions, bool bf16,
                        std::string &error);
bool addChannelBias(CudaDevice *device, const void *bias, void *out,
                    int64_t batch, int64_t channels, int64_t positions,
                    bool bf16, std::string &error);

} // namespace trainc::rt

#endif
