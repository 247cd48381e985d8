/* trainc's side of the benchmark (bench/run.py): loads one model library
 * with dlopen, opens a session, trains on one fixed batch and prints one
 * JSON line with the time of every step, the losses and resident memory.
 *
 * Usage:
 *   trainc_runner LIB.so --threads N --warmup W --min-steps A --max-steps B
 *       --min-seconds S --input DTYPE:D0xD1x...:FILE [--input ...]
 *       [--labels DTYPE:D0x...:FILE]
 * DTYPE is f32, i64 or i32; FILE holds the raw row-major values. Inputs go
 * in the order of the manifest's train_step inputs.
 *
 * Memory: VmRSS is read just before the first step and the peak (VmHWM) is
 * reset there (writing 5 to /proc/self/clear_refs), then read again after
 * the warm-up steps and reset, and read a last time after the timed steps.
 * The harness reports the timed steps' peak minus the RSS before the first
 * step; the RSS before the session opened is printed too (the session
 * allocates and zeroes its arena and persistent tensors when it opens).
 * The same protocol is bench/measure.py's, for the Python peers.
 *
 * Under mpirun, with a --data-parallel library, every process runs this and
 * prints its line (rank, world_size, and the seconds the timed steps'
 * all-reduces ran and were waited for); the run is then --min-steps steps
 * long on every process. */
#define _POSIX_C_SOURCE 200809L
#include "trainc/runtime.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_INPUTS 8
#define MAX_RANK 8

typedef struct api {
  const char *(*last_error)(void);
  trainc_status (*open)(const trainc_session_options *, trainc_session **);
  void (*close)(trainc_session *);
  trainc_status (*train_step)(trainc_session *, const trainc_tensor *, int32_t,
                              const trainc_tensor *, float *);
  trainc_status (*get_memory)(const trainc_session *, size_t *, size_t *);
  /* Data-parallel libraries (optional: null in older libraries). */
  trainc_status (*get_world)(const trainc_session *, int32_t *, int32_t *);
  trainc_status (*get_communication)(const trainc_session *, double *,
                                     double *);
} api;

typedef struct host_tensor {
  trainc_tensor tensor;
  int64_t shape[MAX_RANK];
} host_tensor;

static void die(const char *what, const char *detail) {
  fprintf(stderr, "trainc_runner: %s%s%s\n", what, detail ? ": " : "",
          detail ? detail : "");
  exit(1);
}

static void *symbol(void *library, const char *name) {
  void *found = dlsym(library, name);
  if (!found)
    die("missing symbol", name);
  return found;
}

/* DTYPE:D0xD1x...:FILE -> a tensor holding FILE's bytes. */
static void load_tensor(const char *spec, host_tensor *out) {
  char dtype[8];
  const char *colon = strchr(spec, ':');
  if (!colon || colon - spec >= (long)sizeof(dtype))
    die("bad tensor spec (want DTYPE:SHAPE:FILE)", spec);
  memcpy(dtype, spec, colon - spec);
  dtype[colon - spec] = '\0';
  size_t element;
  if (!strcmp(dtype, "f32")) {
    out->tensor.dtype = TRAINC_FLOAT32;
    element = 4;
  } else if (!strcmp(dtype, "i64")) {
    out->tensor.dtype = TRAINC_INT64;
    element = 8;
  } else if (!strcmp(dtype, "i32")) {
    out->tensor.dtype = TRAINC_INT32;
    element = 4;
  } else {
    die("unsupported dtype", dtype);
  }
  const char *cursor = colon + 1;
  size_t count = 1;
  int rank = 0;
  while (*cursor && *cursor != ':') {
    if (rank == MAX_RANK)
      die("rank too high", spec);
    char *end;
    out->shape[rank] = strtoll(cursor, &end, 10);
    if (end == cursor || out->shape[rank] <= 0)
      die("bad shape", spec);
    count *= (size_t)out->shape[rank++];
    cursor = *end == 'x' ? end + 1 : end;
  }
  if (*cursor != ':')
    die("bad tensor spec (want DTYPE:SHAPE:FILE)", spec);
  const char *path = cursor + 1;
  FILE *file = fopen(path, "rb");
  if (!file)
    die("cannot open", path);
  void *data = malloc(count * element);
  if (!data || fread(data, element, count, file) != count)
    die("short file", path);
  fclose(file);
  out->tensor.rank = rank;
  out->tensor.shape = out->shape;
  out->tensor.data = data;
}

/* A field of /proc/self/status in kB (VmRSS, VmHWM). */
static long status_kb(const char *field) {
  FILE *status = fopen("/proc/self/status", "r");
  char line[256];
  long value = -1;
  size_t length = strlen(field);
  while (status && fgets(line, sizeof line, status))
    if (!strncmp(line, field, length) && line[length] == ':') {
      value = strtol(line + length + 1, NULL, 10);
      break;
    }
  if (status)
    fclose(status);
  return value;
}

/* Resets VmHWM to the current VmRSS (Linux >= 4.0). */
static int reset_peak(void) {
  FILE *refs = fopen("/proc/self/clear_refs", "w");
  if (!refs)
    return 0;
  int ok = fputs("5", refs) >= 0;
  return fclose(refs) == 0 && ok;
}

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec * 1e-6;
}

int main(int argc, char **argv) {
  if (argc < 2)
    die("usage: trainc_runner LIB.so --threads N --warmup W --min-steps A "
        "--max-steps B --min-seconds S --input DTYPE:SHAPE:FILE ... "
        "[--labels DTYPE:SHAPE:FILE]", NULL);
  int threads = 0, warmup = 2, min_steps = 5, max_steps = 100;
  double min_seconds = 2.0;
  host_tensor inputs[MAX_INPUTS], labels;
  trainc_tensor input_tensors[MAX_INPUTS];
  int num_inputs = 0, has_labels = 0;
  for (int i = 2; i < argc; ++i) {
    const char *flag = argv[i];
    if (i + 1 >= argc)
      die("missing value of", flag);
    const char *value = argv[++i];
    if (!strcmp(flag, "--threads"))
      threads = atoi(value);
    else if (!strcmp(flag, "--warmup"))
      warmup = atoi(value);
    else if (!strcmp(flag, "--min-steps"))
      min_steps = atoi(value);
    else if (!strcmp(flag, "--max-steps"))
      max_steps = atoi(value);
    else if (!strcmp(flag, "--min-seconds"))
      min_seconds = atof(value);
    else if (!strcmp(flag, "--input")) {
      if (num_inputs == MAX_INPUTS)
        die("too many inputs", NULL);
      load_tensor(value, &inputs[num_inputs]);
      input_tensors[num_inputs] = inputs[num_inputs].tensor;
      ++num_inputs;
    } else if (!strcmp(flag, "--labels")) {
      load_tensor(value, &labels);
      has_labels = 1;
    } else
      die("unknown option", flag);
  }
  if (max_steps < min_steps || min_steps < 1)
    die("need 1 <= --min-steps <= --max-steps", NULL);

  void *library = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!library)
    die("dlopen failed", dlerror());
  /* POSIX's idiom for a function pointer from dlsym. */
  api model;
  *(void **)&model.last_error = symbol(library, "trainc_last_error");
  *(void **)&model.open = symbol(library, "trainc_session_open");
  *(void **)&model.close = symbol(library, "trainc_session_close");
  *(void **)&model.train_step = symbol(library, "trainc_train_step");
  *(void **)&model.get_memory = symbol(library, "trainc_get_memory");
  *(void **)&model.get_world = dlsym(library, "trainc_get_world");
  *(void **)&model.get_communication =
      dlsym(library, "trainc_get_communication");

  long rss_before_open = status_kb("VmRSS");
  trainc_session_options options = {threads, 0, NULL};
  trainc_session *session;
  if (model.open(&options, &session) != TRAINC_OK)
    die("session open failed", model.last_error());

  long rss_before = status_kb("VmRSS");
  /* What the session planned: its arena and the libraries' scratch. */
  size_t arena_bytes = 0, scratch_bytes = 0;
  if (model.get_memory(session, &arena_bytes, &scratch_bytes) != TRAINC_OK)
    die("trainc_get_memory failed", model.last_error());
  int peak_reset = reset_peak();
  float loss, first_loss = 0;
  for (int step = 0; step < warmup; ++step) {
    if (model.train_step(session, input_tensors, num_inputs,
                         has_labels ? &labels.tensor : NULL, &loss) != TRAINC_OK)
      die("train step failed", model.last_error());
    if (step == 0)
      first_loss = loss;
  }
  long hwm_warmup = status_kb("VmHWM");
  peak_reset = peak_reset && reset_peak();
  /* A data-parallel job: every process must take the same number of steps
   * (each step is a collective), so the run is --min-steps long when the
   * job has several processes. */
  int32_t rank = 0, world_size = 1;
  if (model.get_world)
    model.get_world(session, &rank, &world_size);
  if (world_size > 1)
    max_steps = min_steps;
  double busy_before = 0, waited_before = 0;
  if (model.get_communication)
    model.get_communication(session, &busy_before, &waited_before);

  double *times = malloc(sizeof(double) * max_steps);
  double total = 0;
  int steps = 0;
  while (steps < min_steps || (total < min_seconds * 1e3 && steps < max_steps)) {
    double start = now_ms();
    if (model.train_step(session, input_tensors, num_inputs,
                         has_labels ? &labels.tensor : NULL, &loss) != TRAINC_OK)
      die("train step failed", model.last_error());
    times[steps] = now_ms() - start;
    total += times[steps];
    if (warmup == 0 && steps == 0)
      first_loss = loss;
    ++steps;
  }
  long hwm_timed = status_kb("VmHWM");
  double busy = 0, waited = 0;
  if (model.get_communication)
    model.get_communication(session, &busy, &waited);

  printf("{\"framework\": \"trainc\", \"threads\": %d, \"ms\": [", threads);
  for (int i = 0; i < steps; ++i)
    printf("%s%.4f", i ? ", " : "", times[i]);
  printf("], \"first_loss\": %.9g, \"last_loss\": %.9g, "
         "\"rss_before_open_kb\": %ld, \"rss_before_kb\": %ld, "
         "\"hwm_warmup_kb\": %ld, \"hwm_timed_kb\": %ld, \"peak_reset\": %s, "
         "\"arena_bytes\": %zu, \"library_scratch_bytes\": %zu, "
         "\"rank\": %d, \"world_size\": %d, \"comm_busy_s\": %.6f, "
         "\"comm_waited_s\": %.6f}\n",
         first_loss, loss, rss_before_open, rss_before, hwm_warmup, hwm_timed,
         peak_reset ? "true" : "false", arena_bytes, scratch_bytes, rank,
         world_size, busy - busy_before, waited - waited_before);
  model.close(session);
  free(times);
  return 0;
}
