/* The round trip of one cache line between CPU 0 and CPU 1, in ns.
 *
 *   trainc-core-latency [ROUND_TRIPS]     (default 20000)
 *
 * Two threads, pinned to the first two CPUs this process may use, pass a
 * counter back and forth through one cache line; prints one JSON line,
 * {"round_trip_ns": N} (null with fewer than two CPUs).
 *
 * Why: on the 2-vCPU VMs this project is measured on, the host moves the
 * two vCPUs between its cores every few seconds. While they sit on the
 * same core complex a round trip takes about 85 ns; while they do not,
 * about 350 ns, and every kernel that shares data between the two
 * threads slows down with it: EfficientNet-B0's two-thread step took 25
 * or 45 ms by that alone (docs/PERFORMANCE.md, "Reading the numbers").
 * bench/run.py and bench/ab.py probe before each run and report which
 * runs fell in a slow phase. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static _Alignas(64) atomic_long counter;
static long roundTrips = 20000;
enum { kWarmUp = 2000 };
static int cpus[2];

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

static void pin(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

/* The second thread answers every odd value with the next even one
 * (warm-up round trips first, then the timed ones). */
static void *answer(void *unused) {
  (void)unused;
  for (long i = 0; i < kWarmUp + roundTrips; ++i) {
    while (atomic_load_explicit(&counter, memory_order_acquire) != 2 * i + 1)
      ;
    atomic_store_explicit(&counter, 2 * i + 2, memory_order_release);
  }
  return NULL;
}

int main(int argc, char **argv) {
  if (argc > 1)
    roundTrips = atol(argv[1]);
  if (roundTrips <= 0) {
    fprintf(stderr, "usage: %s [ROUND_TRIPS > 0]\n", argv[0]);
    return 2;
  }
  cpu_set_t allowed;
  int found = 0;
  if (sched_getaffinity(0, sizeof(allowed), &allowed) == 0)
    for (int cpu = 0; cpu < CPU_SETSIZE && found < 2; ++cpu)
      if (CPU_ISSET(cpu, &allowed))
        cpus[found++] = cpu;
  if (found < 2) {
    printf("{\"round_trip_ns\": null}\n");
    return 0;
  }
  pin(cpus[0]);
  /* The answering thread starts on its own CPU: started beside this one,
   * it would wait for a time slice of the CPU this thread spins on. */
  pthread_attr_t attributes;
  cpu_set_t other;
  CPU_ZERO(&other);
  CPU_SET(cpus[1], &other);
  pthread_t thread;
  if (pthread_attr_init(&attributes) != 0 ||
      pthread_attr_setaffinity_np(&attributes, sizeof(other), &other) != 0 ||
      pthread_create(&thread, &attributes, answer, NULL) != 0) {
    perror("pthread_create");
    return 1;
  }
  double start = 0;
  for (long i = 0; i < kWarmUp + roundTrips; ++i) {
    if (i == kWarmUp)
      start = now();
    atomic_store_explicit(&counter, 2 * i + 1, memory_order_release);
    while (atomic_load_explicit(&counter, memory_order_acquire) != 2 * i + 2)
      ;
  }
  double seconds = now() - start;
  pthread_join(thread, NULL);
  printf("{\"round_trip_ns\": %.1f}\n", seconds / roundTrips * 1e9);
  return 0;
}
