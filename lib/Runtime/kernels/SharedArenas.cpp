//===- SharedArenas.cpp - arenas the processes of a job on one host share -===//
#include "lib/Runtime/kernels/SharedArenas.h"

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include <fcntl.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace trainc::rt {
namespace {

/// Waits on a word in memory shared between processes (so not a private
/// futex) while it still holds `seen`.
void futexWait(std::atomic<uint32_t> &word, uint32_t seen) {
  syscall(SYS_futex, reinterpret_cast<uint32_t *>(&word), FUTEX_WAIT, seen,
          nullptr, nullptr, 0);
}

void futexWakeAll(std::atomic<uint32_t> &word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t *>(&word), FUTEX_WAKE, INT_MAX,
          nullptr, nullptr, 0);
}

} // namespace

/// Sums `count` floats at `offset` of every arena, times `scale`, into
/// every arena (the same bits everywhere: one process adds them all, in
/// rank order).
void sumIntoEveryArena(const SharedArenas &arenas, size_t offset, size_t count,
                       float scale) {
  size_t processes = arenas.bases.size();
  auto at = [&](size_t rank) {
    return reinterpret_cast<float *>(arenas.bases[rank] + offset);
  };
  if (processes == 2) {
    float *__restrict a = at(0);
    float *__restrict b = at(1);
    for (size_t i = 0; i < count; ++i) {
      float sum = (a[i] + b[i]) * scale;
      a[i] = sum;
      b[i] = sum;
    }
    return;
  }
  // Blocks small enough to stay in the cache between the passes.
  constexpr size_t kBlock = 4096;
  std::vector<float> sum(kBlock);
  for (size_t begin = 0; begin < count; begin += kBlock) {
    size_t n = std::min(kBlock, count - begin);
    std::memcpy(sum.data(), at(0) + begin, n * sizeof(float));
    for (size_t rank = 1; rank < processes; ++rank) {
      const float *x = at(rank) + begin;
      for (size_t i = 0; i < n; ++i)
        sum[i] += x[i];
    }
    for (size_t i = 0; i < n; ++i)
      sum[i] *= scale;
    for (size_t rank = 0; rank < processes; ++rank)
      std::memcpy(at(rank) + begin, sum.data(), n * sizeof(float));
  }
}

void publishRound(BucketControl &control, uint32_t round) {
  control.round.store(round, std::memory_order_release);
  futexWakeAll(control.round);
}

void waitForRound(BucketControl &control, uint32_t round) {
  for (;;) {
    uint32_t seen = control.round.load(std::memory_order_acquire);
    if (static_cast<int32_t>(seen - round) >= 0)
      return;
    futexWait(control.round, seen);
  }
}

bool sharedMemoryAllowed() {
  const char *value = std::getenv("TRAINC_MPI_SHARED_MEMORY");
  return !value || std::strcmp(value, "0") != 0;
}

int mapSharedArenas(MPI_Comm comm, int rank, int size, size_t bytes,
                    uint64_t library, int64_t buckets,
                    std::shared_ptr<SharedArenas> &shared) {
  MPI_Comm host = MPI_COMM_NULL;
  int code =
      MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &host);
  if (code != MPI_SUCCESS)
    return code;
  int onHost = 0;
  MPI_Comm_size(host, &onHost);
  MPI_Comm_free(&host);
  uint64_t mine[4] = {library, bytes, static_cast<uint64_t>(buckets),
                      onHost == size && bytes > 0 && sharedMemoryAllowed()};
  uint64_t low[4], high[4];
  if ((code = MPI_Allreduce(mine, low, 4, MPI_UINT64_T, MPI_MIN, comm)) ||
      (code = MPI_Allreduce(mine, high, 4, MPI_UINT64_T, MPI_MAX, comm)))
    return code;
  if (!low[3] || std::memcmp(low, high, sizeof(low)) != 0)
    return MPI_SUCCESS;

  auto arenas = std::make_shared<SharedArenas>();
  size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  auto roundUp = [&](size_t n) { return (n + page - 1) / page * page; };
  arenas->bytes = bytes;
  arenas->mapped = roundUp(bytes) + roundUp(buckets * sizeof(BucketControl));
  arenas->rank = rank;
  arenas->bases.assign(size, nullptr);
  auto map = [&](const char *name, int flags) -> char * {
    int fd = shm_open(name, flags, 0600);
    if (fd < 0)
      return nullptr;
    // Reserve the pages now: a full /dev/shm must fail here, not fault
    // in a step.
    bool sized =
        !(flags & O_CREAT) || (ftruncate(fd, arenas->mapped) == 0 &&
                               posix_fallocate(fd, 0, arenas->mapped) == 0);
    void *base = sized ? mmap(nullptr, arenas->mapped, PROT_READ | PROT_WRITE,
                              MAP_SHARED, fd, 0)
                       : MAP_FAILED;
    close(fd);
    return base == MAP_FAILED ? nullptr : static_cast<char *>(base);
  };
  static std::atomic<unsigned> segments{0};
  char name[64];
  std::snprintf(name, sizeof(name), "/trainc-arena-%ld-%d-%u",
                static_cast<long>(getpid()), rank, segments++);
  arenas->bases[rank] = map(name, O_CREAT | O_EXCL | O_RDWR);
  std::vector<char> names(sizeof(name) * size);
  int ok = arenas->bases[rank] != nullptr, all = 0;
  if ((code = MPI_Allgather(name, sizeof(name), MPI_CHAR, names.data(),
                            sizeof(name), MPI_CHAR, comm)) ||
      (code = MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, comm))) {
    shm_unlink(name);
    return code;
  }
  for (int other = 0; all && other < size; ++other)
    if (other != rank) {
      arenas->bases[other] = map(&names[sizeof(name) * other], O_RDWR);
      ok = ok && arenas->bases[other];
    }
  // Once every process has mapped every segment, the names can go: the
  // memory lives while a process maps it.
  code = MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, comm);
  shm_unlink(name);
  if (code != MPI_SUCCESS || !all)
    return code;
  arenas->controls =
      reinterpret_cast<BucketControl *>(arenas->bases[0] + roundUp(bytes));
  shared = arenas;
  return MPI_SUCCESS;
}

} // namespace trainc::rt
