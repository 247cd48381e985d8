//===- ParallelFor.cpp - the generated kernels' threads -------------------===//
//
// Generated loop nests are split into blocks of their parallel dimension;
// the threads of the process's one OpenMP pool (GNU OpenMP, shared with
// oneDNN and the reference kernels) take contiguous runs of blocks. Each
// block is computed the same way whatever thread runs it, so results do
// not depend on the thread count.
//
//===----------------------------------------------------------------------===//
#include "lib/Runtime/Model.h"

#include <algorithm>
#include <omp.h>

extern "C" void trainc_rt_parallel_for(trainc_rt_task task, void *context,
                                       int64_t blocks) {
  int threads = omp_get_max_threads();
  if (blocks <= 1 || threads <= 1 || omp_in_parallel()) {
    task(context, 0, blocks);
    return;
  }
  int used = static_cast<int>(std::min<int64_t>(threads, blocks));
#pragma omp parallel num_threads(used)
  {
    int64_t thread = omp_get_thread_num(), count = omp_get_num_threads();
    int64_t begin = blocks * thread / count;
    int64_t end = blocks * (thread + 1) / count;
    if (begin < end)
      task(context, begin, end);
  }
}
