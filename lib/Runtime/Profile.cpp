//===- Profile.cpp - time per kernel launch (`trainc compile --profile`) --===//
//
// A profiling build calls trainc_rt_profile_begin before and
// trainc_rt_profile_end after every launch. Launches run one after another
// on the calling thread (a parallel nest returns when all its blocks are
// done), so one start time per session suffices.
//
//===----------------------------------------------------------------------===//
#include "lib/Runtime/Model.h"
#include "lib/Runtime/Session.h"

using namespace trainc::rt;

extern "C" {

void trainc_rt_profile_begin(void *state) {
  static_cast<LaunchState *>(state)->profile.started =
      std::chrono::steady_clock::now();
}

void trainc_rt_profile_end(void *state, int32_t id) {
  Profile &profile = static_cast<LaunchState *>(state)->profile;
  if (id < 0 || static_cast<size_t>(id) >= profile.seconds.size())
    return; // the manifest lists fewer launches than the code times
  profile.seconds[id] += std::chrono::duration<double>(
                             std::chrono::steady_clock::now() - profile.started)
                             .count();
  ++profile.calls[id];
}

trainc_status trainc_get_profile(const trainc_session *session,
                                 double *seconds, int64_t *calls,
                                 int32_t capacity, int32_t *count) {
  if (!isOpen(session))
    return fail(TRAINC_ERROR_INVALID_ARGUMENT, kNotOpen);
  if (!count || capacity < 0 || (capacity > 0 && (!seconds || !calls)))
    return fail(TRAINC_ERROR_INVALID_ARGUMENT,
                "needs a session, a count, and arrays of `capacity` entries");
  const Profile &profile = session->launchState.profile;
  *count = static_cast<int32_t>(profile.seconds.size());
  for (int32_t i = 0; i < std::min(capacity, *count); ++i) {
    seconds[i] = profile.seconds[i];
    calls[i] = profile.calls[i];
  }
  return TRAINC_OK;
}

} // extern "C"
