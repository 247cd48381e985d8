/*===- trainc/runtime.h - the C API of a compiled model ----------*- C -*-===*
 *
 * Every model library built by `trainc compile -o libNAME.so` exports this
 * API (and nothing else). A session owns the model's parameters, optimizer
 * state and scratch memory; callers own their input, label and output
 * buffers. Functions return TRAINC_OK or an error code, with a message in
 * trainc_last_error(); no exception or abort crosses this boundary.
 *
 * Versioned: TRAINC_API_VERSION changes when this interface changes
 * incompatibly; trainc_api_version() reports the library's.
 *
 *===----------------------------------------------------------------------===*/
#ifndef TRAINC_RUNTIME_H
#define TRAINC_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TRAINC_API_VERSION 1

/* The only symbols a model library exports. */
#if defined(__GNUC__)
#define TRAINC_API __attribute__((visibility("default")))
#else
#define TRAINC_API
#endif

typedef enum trainc_status {
  TRAINC_OK = 0,
  TRAINC_ERROR_INVALID_ARGUMENT = 1, /* null pointer, wrong dtype/shape/name */
  TRAINC_ERROR_IO = 2,               /* a file could not be read or written */
  TRAINC_ERROR_CORRUPT = 3,          /* a checkpoint is damaged or not ours */
  TRAINC_ERROR_UNSUPPORTED_CPU = 4,  /* the CPU lacks features the code uses */
  TRAINC_ERROR_KERNEL = 5,           /* a kernel rejected its input */
  TRAINC_ERROR_INTERNAL = 6,
  /* an allocation failed (the message says how many bytes, for what) */
  TRAINC_ERROR_OUT_OF_MEMORY = 7,
  /* a training step's loss is NaN or infinite (the step was taken), or a
   * --check-numerics library found a NaN or an infinity (the message says
   * where) */
  TRAINC_ERROR_NOT_FINITE = 8,
  /* a --target cuda library: no CUDA driver, no GPU, no code for this GPU,
   * or a device error; a --data-parallel library: MPI failed (the message
   * says which) */
  TRAINC_ERROR_DEVICE = 9
} trainc_status;

typedef enum trainc_dtype {
  TRAINC_FLOAT32 = 0,
  TRAINC_FLOAT64 = 1,
  TRAINC_INT64 = 4,
  TRAINC_INT32 = 5,
  TRAINC_BOOL = 8
} trainc_dtype;

/* A tensor at the C boundary: dtype and shape always travel with the data,
 * which is dense and row-major. */
typedef struct trainc_tensor {
  trainc_dtype dtype;
  int32_t rank;
  const int64_t *shape;
  void *data;
} trainc_tensor;

typedef struct trainc_session trainc_session;

/* Options of a session; NULL options are the defaults (all zero). */
typedef struct trainc_session_options {
  int32_t num_threads;       /* 0: all cores; negative: invalid */
  uint64_t seed;             /* dropout RNG */
  const char *weights_path;  /* NULL: the weights embedded in the library */
} trainc_session_options;

TRAINC_API int32_t trainc_api_version(void);
/* The JSON manifest embedded in the library (inputs, outputs, parameters,
 * shapes, dtypes, loss, optimizer, arena size, backends, CPU features). */
TRAINC_API const char *trainc_manifest(void);
/* The message of the last error on this thread ("" if none). */
TRAINC_API const char *trainc_last_error(void);

/* Sessions and threads: calls on one session must not overlap (the caller
 * serializes them); the kernels of a call run on the process's OpenMP
 * pool. Every call on a session that was closed (or never opened) returns
 * TRAINC_ERROR_INVALID_ARGUMENT; closing it again, or closing NULL, does
 * nothing. (A pointer the allocator reused for a new session is that new
 * session.) */
TRAINC_API trainc_status trainc_session_open(const trainc_session_options *options,
                                  trainc_session **session);
TRAINC_API void trainc_session_close(trainc_session *session);

/* Memory the session holds for running steps, besides parameters and
 * optimizer state: the arena of intermediates (planned at compile time; the
 * manifest's "arena_size") and the scratch memory kernel libraries asked for
 * when the session opened (oneDNN's scratchpads and layout conversions,
 * which depend on the running CPU). Either pointer may be NULL. */
TRAINC_API trainc_status trainc_get_memory(const trainc_session *session,
                                           size_t *arena_bytes,
                                           size_t *library_scratch_bytes);

TRAINC_API trainc_status trainc_set_learning_rate(trainc_session *session, double lr);
TRAINC_API trainc_status trainc_get_learning_rate(const trainc_session *session,
                                       double *lr);
/* Steps taken so far (a step skipped by loss scaling is not counted). */
TRAINC_API trainc_status trainc_get_step(const trainc_session *session, int64_t *step);
/* Dynamic loss scaling (models compiled with --amp fp16): the loss scale
 * of the next step and how many steps were skipped because a gradient was
 * not finite (those changed no parameter or optimizer state). Either
 * pointer may be NULL. TRAINC_ERROR_INVALID_ARGUMENT for a model without
 * loss scaling. */
TRAINC_API trainc_status trainc_get_loss_scale(const trainc_session *session,
                                               double *scale,
                                               int64_t *skipped_steps);

/* One training step on caller-owned buffers, in the order of the manifest's
 * "inputs"; `labels` may be NULL for a model whose output is its loss.
 * TRAINC_ERROR_NOT_FINITE when the step's loss is NaN or infinite: the
 * step was taken (and `*loss` written), so the parameters may no longer be
 * finite; stop, or restore a checkpoint. A library compiled with
 * `--check-numerics` also returns it, from this call and from
 * trainc_forward, when an input, a parameter or a kernel's output is not
 * finite: the call stopped right there (`*loss` is not written, the
 * launches before it ran, so the optimizer may have updated some
 * parameters), and trainc_last_error names the input or the launch. */
TRAINC_API trainc_status trainc_train_step(trainc_session *session,
                                const trainc_tensor *inputs,
                                int32_t num_inputs,
                                const trainc_tensor *labels, float *loss);
/* Inference (BatchNorm on running statistics, no dropout) into
 * caller-owned output buffers. */
TRAINC_API trainc_status trainc_forward(trainc_session *session,
                             const trainc_tensor *inputs, int32_t num_inputs,
                             trainc_tensor *outputs, int32_t num_outputs);

/* Parameters and BatchNorm statistics by ONNX initializer name. Setting
 * one also renews the low-precision copy a mixed-precision library keeps
 * of it (before the next step); a copy itself cannot be set. */
TRAINC_API int32_t trainc_num_parameters(const trainc_session *session);
TRAINC_API const char *trainc_parameter_name(const trainc_session *session, int32_t i);
TRAINC_API trainc_status trainc_get_parameter(const trainc_session *session,
                                   const char *name, trainc_tensor *out);
TRAINC_API trainc_status trainc_set_parameter(trainc_session *session, const char *name,
                                   const trainc_tensor *value);

/* Parameters, state, optimizer state and step; written atomically (a
 * temporary file, then rename). `extra` is opaque caller data stored with
 * it (e.g. a data-loader position), up to 1 MiB; may be NULL. */
TRAINC_API trainc_status trainc_save_checkpoint(const trainc_session *session,
                                     const char *path, const void *extra,
                                     size_t extra_size);
/* Restores a checkpoint written by the same model (its hash must match).
 * `extra`/`extra_capacity` receive the caller data (may be NULL). */
TRAINC_API trainc_status trainc_load_checkpoint(trainc_session *session, const char *path,
                                     void *extra, size_t extra_capacity,
                                     size_t *extra_size);

/* Writes the trained model as an ONNX inference model: the graph it was
 * compiled from, with the session's parameters and BatchNorm statistics as
 * initializers, BatchNorm on running statistics and Dropout as Identity.
 * Written atomically. */
TRAINC_API trainc_status trainc_export_onnx(const trainc_session *session,
                                            const char *path);

/* Time spent in each kernel launch since the session opened, for a library
 * built by `trainc compile --profile` (which times every launch; other
 * libraries have none: *count is 0). Entry i is the launch described by
 * entry i of the manifest's "profile" list (function, kernel, backend,
 * shapes, estimated flops and bytes); `calls[i]` counts its runs. Up to
 * `capacity` entries are written; *count receives how many there are. */
TRAINC_API trainc_status trainc_get_profile(const trainc_session *session,
                                            double *seconds, int64_t *calls,
                                            int32_t capacity, int32_t *count);

/* Data-parallel training (libraries compiled with `trainc compile
 * --data-parallel`). Every step averages each gradient over the processes
 * of an MPI job before the optimizer reads it, so N processes that each
 * take a step on their own batch of B samples take the step one process
 * takes on the N * B samples. Run the program under `mpirun -np N`; each
 * process opens a session and feeds it its own share of the data.
 *
 * The job is MPI_COMM_WORLD, with MPI initialized by the library when the
 * first session opens (and finalized at exit) unless the program did so
 * already; a program that manages MPI itself may pass a communicator of
 * its own first. Without a launcher (no mpirun), the library trains alone:
 * rank 0 of 1, and MPI is not initialized. A library without
 * --data-parallel is always rank 0 of 1.
 *
 * BatchNorm's running statistics are each process's own (as in PyTorch's
 * DistributedDataParallel); parameters and optimizer state stay equal on
 * every process. The loss trainc_train_step returns is this process's.
 *
 * When every process of the job runs on one host, the sessions map each
 * other's arenas (POSIX shared memory, /dev/shm, set up over MPI when they
 * open) and the last process to finish a gradient sums it for all; jobs
 * across hosts, or with TRAINC_MPI_SHARED_MEMORY=0 in every process's
 * environment, use MPI_Allreduce. Either way trainc_session_open is
 * collective: every process opens its sessions in the same order. */

/* This process's rank in the job, from 0, and the number of processes;
 * either pointer may be NULL. */
TRAINC_API trainc_status trainc_get_world(const trainc_session *session,
                                          int32_t *rank, int32_t *size);
/* Seconds this session's gradient all-reduces have run (on the library's
 * communication thread) and seconds its steps have waited for them, since
 * it opened: 1 - waited / busy is the share of the communication hidden
 * behind the backward pass. Both 0 for a job of one process. On one host
 * (shared arenas, above), `busy` counts the sums this process did for the
 * job: it may be 0 on a process that never finished a gradient last.
 * Either pointer may be NULL. */
TRAINC_API trainc_status trainc_get_communication(const trainc_session *session,
                                                  double *busy_seconds,
                                                  double *waited_seconds);
/* Sums `count` doubles over the job's processes, in place (e.g. a test
 * set's correct answers and samples). Every process must call it with the
 * same count; it returns when all have. */
TRAINC_API trainc_status trainc_all_reduce_sum(trainc_session *session,
                                               double *values, int32_t count);
/* `mpi_comm` points at the MPI_Comm that data-parallel sessions of this
 * process train over (the library duplicates it); MPI must be initialized
 * with at least MPI_THREAD_SERIALIZED. Call it before the first such
 * session opens. */
TRAINC_API trainc_status trainc_use_communicator(const void *mpi_comm);

#ifdef __cplusplus
}
#endif

#endif /* TRAINC_RUNTIME_H */
