//===- Communicator.cpp - the communicator a program asked for ------------===//
//
// Process-wide, and apart from the C API (DataParallel.cpp) so that the
// mpi kernels can read it without pulling in the session.
//
//===----------------------------------------------------------------------===//
#include "lib/Runtime/Communicator.h"

#include <atomic>

namespace trainc::rt {
namespace {
std::atomic<const void *> requested{nullptr};
std::atomic<bool> inUse{false};
} // namespace

const void *requestedCommunicator() { return requested.load(); }
void requestCommunicator(const void *communicator) {
  requested.store(communicator);
}
bool communicatorInUse() { return inUse.load(); }
void markCommunicatorInUse() { inUse.store(true); }

} // namespace trainc::rt
