//===- DataParallel.cpp - the C API of data-parallel libraries ------------===//
//
// trainc_get_world, trainc_get_communication, trainc_all_reduce_sum and
// trainc_use_communicator.
// A library without --data-parallel is a job of one process: rank 0 of 1,
// and a sum over the job is the value itself.
//
//===----------------------------------------------------------------------===//
#include "lib/Runtime/Communicator.h"
#include "lib/Runtime/Session.h"

using namespace trainc::rt;

extern "C" {

trainc_status trainc_use_communicator(const void *mpi_comm) {
  if (!mpi_comm)
    return fail(TRAINC_ERROR_INVALID_ARGUMENT, "the communicator is null");
  if (communicatorInUse() && requestedCommunicator() != mpi_comm)
    return fail(TRAINC_ERROR_INVALID_ARGUMENT,
                "a data-parallel session already opened in this process: "
                "its communicator can no longer change");
  requestCommunicator(mpi_comm);
  return TRAINC_OK;
}

trainc_status trainc_get_world(const trainc_session *session, int32_t *rank,
                               int32_t *size) {
  if (!isOpen(session))
    return fail(TRAINC_ERROR_INVALID_ARGUMENT, kNotOpen);
  const Communicator *communicator =
      session->launchState.libraries.communicator.get();
  if (rank)
    *rank = communicator ? communicator->rank() : 0;
  if (size)
    *size = communicator ? communicator->size() : 1;
  return TRAINC_OK;
}

trainc_status trainc_get_communication(const trainc_session *session,
                                       double *busy_seconds,
                                       double *waited_seconds) {
  if (!isOpen(session))
    return fail(TRAINC_ERROR_INVALID_ARGUMENT, kNotOpen);
  const CommunicationTimes *times =
      session->launchState.libraries.communicationTimes.get();
  if (busy_seconds)
    *busy_seconds = times ? times->busy.load() * 1e-9 : 0.0;
  if (waited_seconds)
    *waited_seconds = times ? times->waited.load() * 1e-9 : 0.0;
  return TRAINC_OK;
}

trainc_status trainc_all_reduce_sum(trainc_session *session, double *values,
                                    int32_t count) {
  if (!isOpen(session))
    return fail(TRAINC_ERROR_INVALID_ARGUMENT, kNotOpen);
  if (count < 0 || (count > 0 && !values))
    return fail(TRAINC_ERROR_INVALID_ARGUMENT,
                "values must hold a non-negative count of doubles");
  Communicator *communicator =
      session->launchState.libraries.communicator.get();
  if (!communicator || count == 0)
    return TRAINC_OK;
  std::string error;
  if (!communicator->allReduceSum(values, static_cast<size_t>(count), error))
    return fail(TRAINC_ERROR_DEVICE, "all-reduce failed: " + error);
  return TRAINC_OK;
}

} // extern "C"
