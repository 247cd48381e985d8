//===- Model.h - what a compiled model provides the runtime ----*- C++ -*-===//
//
// Symbols that `trainc compile` emits into the model's object file and the
// runtime (linked into the same .so) uses. Generated functions take the
// runtime state, one pointer per argument (in the manifest's order) and
// the arena, and return 0 or the failing kernel's status.
//
//===----------------------------------------------------------------------===//
#ifndef TRAINC_LIB_RUNTIME_MODEL_H
#define TRAINC_LIB_RUNTIME_MODEL_H

#include <cstdint>

extern "C" {
extern const char trainc_model_manifest[];
extern const unsigned char trainc_model_weights[];
/// The ONNX inference model without its trained initializers (may be
/// empty), for trainc_export_onnx.
extern const unsigned char trainc_model_onnx[];
extern const uint64_t trainc_model_onnx_size;
/// Every kernel descriptor the generated functions pass to
/// trainc_rt_launch (the same addresses), null-terminated: the session
/// prepares each one when it opens.
extern const char *const trainc_model_kernels[];
/// The CUDA target's device code: one fatbin per architecture, ended by an
/// entry with a null `arch` (only that entry on the CPU target).
struct trainc_model_gpu_image {
  const char *arch;
  const void *data;
  uint64_t size;
};
extern const trainc_model_gpu_image trainc_model_gpu_images[];
/// The CUDA target: the model's constants (kernel.constant), which the
/// session copies to the device; generated code asks for the copies by
/// index (trainc_rt_cuda_constant). Empty on the CPU target.
extern const void *const trainc_model_constants[];
extern const uint64_t trainc_model_constant_sizes[];
extern const uint64_t trainc_model_num_constants;
int32_t trainc_model_train_step(void *state, void *const *arguments,
                                void *arena);
int32_t trainc_model_eval(void *state, void *const *arguments, void *arena);
/// Casts every parameter into the low-precision copy @train_step keeps
/// (--trainc-keep-weight-copies); only in libraries that keep copies
/// (weak: null elsewhere).
__attribute__((weak)) int32_t
trainc_model_refresh_weight_copies(void *state, void *const *arguments,
                                   void *arena);

/// Called by generated code once per kernel; see Launch.h.
int32_t trainc_rt_launch(void *state, const char *descriptor,
                         void *const *inputs, void *const *outputs);

/// Called by generated code when a kernel's input check (loop.check)
/// found `status` != 0: the error is `message` with "{}" replaced by the
/// status; returns TRAINC_ERROR_KERNEL.
int32_t trainc_rt_check_failed(void *state, const char *message,
                               int64_t status);

/// A --check-numerics build, after each launch and when a function
/// starts: tests the buffers `pointers` holds as entry `id` of the
/// manifest's "numerics" list describes them; TRAINC_ERROR_NOT_FINITE, with
/// the error naming the launch or the argument, where a NaN or an infinity
/// starts (CheckNumerics.cpp), else 0.
int32_t trainc_rt_check_numerics(void *state, void *const *pointers,
                                 int32_t id);

/// Runs blocks [0, blocks) of a generated loop nest on the session's
/// threads: `task(context, begin, end)` once per contiguous run of blocks.
typedef void (*trainc_rt_task)(void *context, int64_t begin, int64_t end);
void trainc_rt_parallel_for(trainc_rt_task task, void *context,
                            int64_t blocks);

/// The CUDA target, called by generated code (arguments and the arena are
/// device addresses there). Launches kernel `name` on `blocks` x `threads`
/// with `count` device addresses as parameters; 0 or TRAINC_ERROR_DEVICE.
int32_t trainc_rt_cuda_launch(void *state, const char *name, int64_t blocks,
                              int64_t threads, void *const *addresses,
                              int32_t count);
/// After a kernel with a loop.check: reads its i64 status from the device
/// and fails as trainc_rt_check_failed when it is not 0.
int32_t trainc_rt_cuda_check(void *state, void *status, const char *message);
/// The device copy of constant `index`.
void *trainc_rt_cuda_constant(void *state, int32_t index);

/// In a profiling build, around every launch: begin starts the clock, end
/// adds the time since to launch `id` (see Profile in Session.h).
void trainc_rt_profile_begin(void *state);
void trainc_rt_profile_end(void *state, int32_t id);
}

#endif
