/* A program that manages MPI itself and trains a --data-parallel library
 * over a communicator of its own (trainc_use_communicator), linked against
 * the library like any C program.
 *
 *   own_communicator split      MPI_THREAD_MULTIPLE; MPI_COMM_WORLD split
 *                               into one communicator per rank: every
 *                               session is rank 0 of 1 and trains alone
 *                               (the loss is its own batch's, not the
 *                               job's); the communicator cannot change once
 *                               a session opened; the program finalizes.
 *   own_communicator world      the program's MPI_COMM_WORLD: rank r of N,
 *                               and trainc_all_reduce_sum sums over it; the
 *                               processes (on one host) map each other's
 *                               arenas, unless TRAINC_MPI_SHARED_MEMORY=0
 *                               (then: none mapped).
 *   own_communicator funneled   MPI_THREAD_FUNNELED: opening a session
 *                               fails with TRAINC_ERROR_DEVICE, naming the
 *                               thread level it needs.
 * Run under mpirun -np 2; exits non-zero on any failure. */
#include "trainc/runtime.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(condition)                                                       \
  do {                                                                         \
    if (!(condition)) {                                                        \
      fprintf(stderr, "own_communicator: %s failed at line %d: %s\n",          \
              #condition, __LINE__, trainc_last_error());                      \
      MPI_Abort(MPI_COMM_WORLD, 1);                                            \
    }                                                                          \
  } while (0)

/* How many arenas of a data-parallel session this process maps: the
 * shared-memory segments in /proc/self/maps (unlinked once mapped). */
static int mapped_arenas(void) {
  FILE *maps = fopen("/proc/self/maps", "r");
  char line[512];
  int count = 0;
  while (maps && fgets(line, sizeof(line), maps))
    if (strstr(line, "/dev/shm/trainc-arena-"))
      ++count;
  if (maps)
    fclose(maps);
  return count;
}

static float step(trainc_session *session) {
  static float image[8 * 784];
  static int64_t labels[8];
  static const int64_t image_shape[] = {8, 1, 28, 28}, label_shape[] = {8};
  for (int i = 0; i < 8 * 784; ++i)
    image[i] = (float)((i * 37) % 101) / 101.0f;
  for (int i = 0; i < 8; ++i)
    labels[i] = i;
  trainc_tensor input = {TRAINC_FLOAT32, 4, image_shape, image};
  trainc_tensor label = {TRAINC_INT64, 1, label_shape, labels};
  float loss = 0;
  CHECK(trainc_train_step(session, &input, 1, &label, &loss) == TRAINC_OK);
  return loss;
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "";
  int funneled = strcmp(mode, "funneled") == 0;
  int provided = 0;
  MPI_Init_thread(&argc, &argv,
                  funneled ? MPI_THREAD_FUNNELED : MPI_THREAD_MULTIPLE,
                  &provided);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm world = MPI_COMM_WORLD; /* an object to point at */
  trainc_session_options options = {1, 0, NULL};
  trainc_session *session = NULL;
  int32_t got_rank = -1, got_size = -1;

  if (funneled) {
    CHECK(trainc_session_open(&options, &session) == TRAINC_ERROR_DEVICE);
    CHECK(strstr(trainc_last_error(), "MPI_THREAD_SERIALIZED") != NULL);
  } else if (strcmp(mode, "split") == 0) {
    MPI_Comm alone;
    MPI_Comm_split(MPI_COMM_WORLD, rank, 0, &alone);
    CHECK(trainc_use_communicator(NULL) == TRAINC_ERROR_INVALID_ARGUMENT);
    CHECK(trainc_use_communicator(&alone) == TRAINC_OK);
    CHECK(trainc_session_open(&options, &session) == TRAINC_OK);
    CHECK(trainc_get_world(session, &got_rank, &got_size) == TRAINC_OK);
    CHECK(got_rank == 0 && got_size == 1);
    step(session);
    CHECK(trainc_use_communicator(&alone) == TRAINC_OK); /* the same one */
    CHECK(trainc_use_communicator(&world) == TRAINC_ERROR_INVALID_ARGUMENT);
    trainc_session_close(session);
    MPI_Comm_free(&alone);
  } else if (strcmp(mode, "world") == 0) {
    CHECK(trainc_use_communicator(&world) == TRAINC_OK);
    CHECK(trainc_session_open(&options, &session) == TRAINC_OK);
    CHECK(trainc_get_world(session, &got_rank, &got_size) == TRAINC_OK);
    CHECK(got_rank == rank && got_size == size);
    const char *shared = getenv("TRAINC_MPI_SHARED_MEMORY");
    CHECK(mapped_arenas() == (shared && !strcmp(shared, "0") ? 0 : size));
    double values[2] = {1.0, (double)rank};
    CHECK(trainc_all_reduce_sum(session, values, 2) == TRAINC_OK);
    CHECK(values[0] == size && values[1] == size * (size - 1) / 2.0);
    CHECK(trainc_all_reduce_sum(session, values, -1) ==
          TRAINC_ERROR_INVALID_ARGUMENT);
    step(session);
    double busy = -1, waited = -1;
    CHECK(trainc_get_communication(session, &busy, &waited) == TRAINC_OK);
    /* On one host the process that finishes a gradient last sums it for
     * the job: the busy time is the job's, not every process's. */
    double job_busy = 0;
    MPI_Allreduce(&busy, &job_busy, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    CHECK(busy >= 0 && job_busy > 0 && waited >= 0);
    trainc_session_close(session);
  } else {
    fprintf(stderr, "usage: own_communicator split|world|funneled\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  /* The program initialized MPI: it finalizes, the library must not. */
  MPI_Finalize();
  if (rank == 0)
    printf("own_communicator %s: ok\n", mode);
  return 0;
}
