//===- Communicator.h - the processes of a data-parallel job ---*- C++ -*-===//
//
// A library compiled with `--data-parallel` averages its gradients over
// the processes of an MPI job (kernels/MpiKernels.cpp, in
// libtrainc_rt_mpi.a, which only such libraries link). The rest of the
// runtime sees the job through this interface, so that it needs no MPI:
// a library without --data-parallel has no communicator (one process).
//
//===----------------------------------------------------------------------===//
#ifndef TRAINC_LIB_RUNTIME_COMMUNICATOR_H
#define TRAINC_LIB_RUNTIME_COMMUNICATOR_H

#include "lib/Runtime/Buffer.h"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace trainc::rt {

class Communicator {
public:
  virtual ~Communicator() = default;
  /// This process's index in the job, from 0, and the number of processes.
  virtual int rank() const = 0;
  virtual int size() const = 0;
  /// Sums `count` doubles over every process, in place. Blocking; every
  /// process of the job must call it with the same count.
  virtual bool allReduceSum(double *values, size_t count,
                            std::string &error) = 0;
  /// Allocates a session's arena of `bytes` (zeroed) into `arena`, after
  /// its launches were prepared; `collectives` is the session's state of
  /// the all-reduce kernels (LibraryContext::collectives) and `library` a
  /// hash of the compiled library. Collective: every process of the job
  /// opens its session at the same point. A job on one host may map the
  /// arenas into every process, so that its all-reduces sum in place
  /// (kernels/MpiKernels.cpp); otherwise private memory. False, with
  /// `error`, if a collective call failed.
  virtual bool allocateArena(size_t bytes, uint64_t library,
                             const std::shared_ptr<void> &collectives,
                             Buffer &arena, std::string &error) {
    (void)library, (void)collectives, (void)error;
    arena = Buffer(bytes);
    return true;
  }
};

/// Where a session's communication time goes (trainc_get_communication):
/// nanoseconds its collectives ran on the communication thread, and
/// nanoseconds its steps waited for them (the part not hidden behind
/// computation).
struct CommunicationTimes {
  std::atomic<int64_t> busy{0}, waited{0};
};

/// What trainc_use_communicator recorded (an MPI_Comm*), or null: the job
/// is MPI_COMM_WORLD.
const void *requestedCommunicator();
void requestCommunicator(const void *communicator);
/// Whether a data-parallel session opened in this process (after which
/// the communicator can no longer change).
bool communicatorInUse();
void markCommunicatorInUse();

} // namespace trainc::rt

#endif
