//===- SharedArenas.h - arenas the processes of a job on one host share --===//
//
// The `mpi` backend's fast path (MpiKernels.cpp): when every process of a
// data-parallel job runs on one host, each session's arena is POSIX shared
// memory that every process maps, so the last process to finish a bucket
// sums it into every arena, and the others wait on a futex in shared
// memory (docs/TRAINING.md, "Data-parallel training").
//
//===----------------------------------------------------------------------===//
#ifndef TRAINC_LIB_RUNTIME_KERNELS_SHAREDARENAS_H
#define TRAINC_LIB_RUNTIME_KERNELS_SHAREDARENAS_H

#include <mpi.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include <sys/mman.h>

namespace trainc::rt {

/// Where the processes of a job on one host meet for one bucket (in the
/// first process's segment; zero when mapped).
struct alignas(64) BucketControl {
  std::atomic<uint32_t> arrived{0}; ///< processes in this round so far
  std::atomic<uint32_t> round{0};   ///< the last round whose sum is written
};
static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t) &&
                  std::atomic<uint32_t>::is_always_lock_free,
              "a futex word must be a plain lock-free 32-bit integer");

/// The arenas of every process of a job on one host, mapped into this
/// one: the same library plans the same offsets in each, so a bucket at
/// offset o of this arena is at o in every other.
struct SharedArenas {
  std::vector<char *> bases;         ///< each process's arena, by rank
  size_t bytes = 0;                  ///< of each arena
  size_t mapped = 0;                 ///< of each mapping: arena and controls
  BucketControl *controls = nullptr; ///< after the first process's arena
  int rank = 0;

  ~SharedArenas() {
    for (char *base : bases)
      if (base)
        munmap(base, mapped);
  }
  bool holds(const void *data, size_t size) const {
    const char *p = static_cast<const char *>(data);
    return p >= bases[rank] && p + size <= bases[rank] + bytes;
  }
  size_t offsetOf(const void *data) const {
    return static_cast<const char *>(data) - bases[rank];
  }
};

/// Sums `count` floats at `offset` of every arena, times `scale`, into
/// every arena (the same bits everywhere: one process adds them all, in
/// rank order).
void sumIntoEveryArena(const SharedArenas &arenas, size_t offset, size_t count,
                       float scale);

/// Publishes round `round` of a bucket's sum and wakes every waiter.
void publishRound(BucketControl &control, uint32_t round);

/// Blocks (without spinning: the cores belong to the backward passes)
/// until round `round` of the bucket's sum is published.
void waitForRound(BucketControl &control, uint32_t round);

/// Whether TRAINC_MPI_SHARED_MEMORY allows shared arenas (unset or not 0).
bool sharedMemoryAllowed();

/// On the communication thread, with every process of the job (`comm`, of
/// which this is `rank` of `size`): maps each process's arena of `bytes`
/// into every other, with `buckets` controls after the first one's, into
/// `shared` (left null, and every process on private arenas, unless all of
/// them are on this host, run the same library, allow it, and could map
/// every segment). Returns an MPI error code.
int mapSharedArenas(MPI_Comm comm, int rank, int size, size_t bytes,
                    uint64_t library, int64_t buckets,
                    std::shared_ptr<SharedArenas> &shared);

} // namespace trainc::rt

#endif // TRAINC_LIB_RUNTIME_KERNELS_SHAREDARENAS_H
