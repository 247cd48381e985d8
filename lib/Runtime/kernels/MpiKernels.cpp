//===- MpiKernels.cpp - the `mpi` backend: gradient all-reduce ------------===//
//
// The kernels of --data-parallel libraries, in libtrainc_rt_mpi.a (linked
// by those libraries alone, with Open MPI), registered through the weak
// hook registerMpiKernels() that registerBuiltinKernels() calls.
//
//   comm.all_reduce_start(g1, ..., gk) -> (staging)
//       copies the bucket's gradients into the staging buffer, one after
//       the other, and hands a sum-all-reduce of it to the communication
//       thread; returns at once.
//   comm.all_reduce_wait(staging) -> (a1, ..., ak)
//       waits for that all-reduce and writes each gradient's mean (the
//       sum divided by the number of processes).
// A bucket of one gradient may be reduced in place (start(g) -> (g),
// wait(g) -> (g)): nothing is copied.
//
// Processes on one host (the usual job: one process per socket or GPU,
// or the two of a 2-core machine) share their arenas instead: when the
// session opens, each maps every other's arena (POSIX shared memory, set
// up over MPI). A start then only counts the process in; the last of the
// job to start a bucket sums it from every arena, in place and already
// divided by the number of processes (on its communication thread, or
// at once for a bucket of up to 1 MiB), and wakes the others' waits (a
// futex in shared memory; SharedArenas.h). Nobody waits for a
// peer to meet it, as MPI_Allreduce's two sides do, spinning, on cores
// the backward pass needs: on a 2-vCPU Zen 4 that took ResNet-18's 2 x 1
// job from 72-75 to 85-88 % scaling (docs/PERFORMANCE.md). Jobs across hosts,
// and TRAINC_MPI_SHARED_MEMORY=0, use MPI_Allreduce.
//
// One communication thread per process makes every MPI call after
// initialization: Open MPI progresses a collective only inside MPI calls,
// so a non-blocking MPI_Iallreduce left alone while the step computes
// would barely move; a blocking MPI_Allreduce on a thread of its own
// moves the bucket while the backward pass goes on. MPI needs
// MPI_THREAD_SERIALIZED for that (one thread at a time).
//
// The job: MPI_COMM_WORLD (or trainc_use_communicator's), duplicated so
// that trainc's collectives never match the program's. If MPI is not
// initialized and the process was not started by a launcher (mpirun sets
// OMPI_COMM_WORLD_SIZE, PMI_SIZE or PMIX_RANK), the library trains alone
// (rank 0 of 1) without initializing MPI.
//
//===----------------------------------------------------------------------===//
#include "lib/Runtime/Communicator.h"
#include "lib/Runtime/kernels/KernelSupport.h"
#include "lib/Runtime/kernels/SharedArenas.h"

#include <mpi.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <thread>

namespace trainc::rt {
namespace {

std::string mpiError(const char *call, int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS)
    length = 0;
  return std::string(call) + " failed: " +
         (length ? std::string(text, length)
                 : "MPI error " + std::to_string(code));
}

/// A collective handed to the communication thread.
struct Job {
  std::function<int()> call; ///< returns an MPI error code
  const char *name = "";
  bool done = false;
  std::string error;
  int64_t nanoseconds = 0; ///< the call's time on the communication thread
  /// A bucket summed in the shared arenas: the round its wait waits for.
  bool shared = false;
  uint32_t round = 0;
};

/// A session's buckets in flight, by index: the start's job, which the
/// wait of the same bucket completes; and the shared arenas, if any.
struct Buckets {
  std::mutex mutex;
  std::map<int64_t, std::shared_ptr<Job>> inFlight;
  int64_t count = 0; ///< one more than the highest bucket index
  std::shared_ptr<SharedArenas> shared;
};

int64_t nowNanoseconds() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

class MpiCommunicator final : public Communicator {
public:
  /// The process's communicator, made by the first data-parallel session
  /// (null with `error` set if MPI cannot be used).
  static std::shared_ptr<MpiCommunicator> get(std::string &error);

  ~MpiCommunicator() override { stop(); }

  int rank() const override { return rank_; }
  int size() const override { return size_; }

  /// Queues `job` on the communication thread (a job of one process is
  /// done at once: the sum over one process is the value).
  void start(const std::shared_ptr<Job> &job) {
    if (size_ == 1) {
      job->done = true;
      return;
    }
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(job);
    wake_.notify_all();
  }

  /// Waits for `job`; false with `error` set if its MPI call failed.
  bool wait(const std::shared_ptr<Job> &job, std::string &error) {
    std::unique_lock<std::mutex> lock(mutex_);
    done_.wait(lock, [&] { return job->done; });
    if (!job->error.empty()) {
      error = job->error;
      return false;
    }
    return true;
  }

  /// Runs `call` on the communication thread and waits for it.
  bool call(const char *name, std::function<int()> call, std::string &error) {
    auto job = std::make_shared<Job>();
    job->name = name;
    job->call = std::move(call);
    start(job);
    return wait(job, error);
  }

  bool allReduceSum(double *values, size_t count, std::string &error) override {
    if (count > static_cast<size_t>(INT32_MAX)) {
      error = "too many values for one all-reduce";
      return false;
    }
    return call(
        "MPI_Allreduce",
        [this, values, count] {
          return MPI_Allreduce(MPI_IN_PLACE, values, static_cast<int>(count),
                               MPI_DOUBLE, MPI_SUM, comm_);
        },
        error);
  }

  bool allocateArena(size_t bytes, uint64_t library,
                     const std::shared_ptr<void> &collectives, Buffer &arena,
                     std::string &error) override {
    auto buckets = std::static_pointer_cast<Buckets>(collectives);
    if (size_ > 1 && buckets) {
      std::shared_ptr<SharedArenas> shared;
      if (!call(
              "mapping the arenas",
              [&] {
                return mapSharedArenas(comm_, rank_, size_, bytes, library,
                                       buckets->count, shared);
              },
              error))
        return false;
      if (shared) {
        buckets->shared = shared;
        arena = Buffer::adopt(shared->bases[rank_], bytes, [shared](void *) {});
        return true;
      }
    }
    arena = Buffer(bytes);
    return true;
  }

  MPI_Comm comm() const { return comm_; }

  /// Ends the communication thread, frees the communicator and finalizes
  /// MPI if this library initialized it (at exit, or when the library is
  /// unloaded).
  void stop() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (stopped_)
        return;
      stopped_ = true;
      wake_.notify_all();
    }
    if (thread_.joinable())
      thread_.join();
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (comm_ != MPI_COMM_NULL && !finalized)
      MPI_Comm_free(&comm_);
    if (ownsMpi_ && !finalized)
      MPI_Finalize();
  }

private:
  void run() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      wake_.wait(lock, [&] { return stopped_ || !queue_.empty(); });
      if (queue_.empty())
        return;
      std::shared_ptr<Job> job = queue_.front();
      queue_.pop_front();
      lock.unlock();
      int64_t started = nowNanoseconds();
      int code = job->call();
      int64_t took = nowNanoseconds() - started;
      lock.lock();
      job->nanoseconds = took;
      if (code != MPI_SUCCESS)
        job->error = mpiError(job->name, code);
      job->done = true;
      done_.notify_all();
    }
  }

  int rank_ = 0, size_ = 1;
  MPI_Comm comm_ = MPI_COMM_NULL;
  bool ownsMpi_ = false;
  std::thread thread_;
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  std::deque<std::shared_ptr<Job>> queue_;
  bool stopped_ = false;
};

/// Whether a launcher started this process as part of a job.
bool startedByLauncher() {
  for (const char *name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"})
    if (std::getenv(name))
      return true;
  return false;
}

std::mutex processMutex;
std::weak_ptr<MpiCommunicator> processCommunicator;
/// Set once: the communicator lives until exit, where it is stopped.
std::shared_ptr<MpiCommunicator> *keptCommunicator = nullptr;

void stopAtExit() {
  if (keptCommunicator)
    (*keptCommunicator)->stop();
}

std::shared_ptr<MpiCommunicator> MpiCommunicator::get(std::string &error) {
  std::lock_guard<std::mutex> lock(processMutex);
  if (auto existing = processCommunicator.lock())
    return existing;
  auto communicator = std::shared_ptr<MpiCommunicator>(new MpiCommunicator());
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (finalized) {
    error = "MPI was finalized before the data-parallel session opened";
    return nullptr;
  }
  const void *requested = requestedCommunicator();
  if (!initialized && !requested && !startedByLauncher()) {
    // A job of one process: no MPI at all.
    markCommunicatorInUse();
    processCommunicator = communicator;
    keptCommunicator = new std::shared_ptr<MpiCommunicator>(communicator);
    return communicator;
  }
  if (!initialized) {
    if (requested) {
      error = "trainc_use_communicator was given a communicator, but MPI "
              "is not initialized";
      return nullptr;
    }
    int provided = 0;
    int code =
        MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided);
    if (code != MPI_SUCCESS) {
      error = mpiError("MPI_Init_thread", code);
      return nullptr;
    }
    communicator->ownsMpi_ = true;
  }
  int provided = 0;
  MPI_Query_thread(&provided);
  if (provided < MPI_THREAD_SERIALIZED) {
    error = "MPI was initialized with a thread level below "
            "MPI_THREAD_SERIALIZED; trainc's communication thread needs it "
            "(use MPI_Init_thread)";
    if (communicator->ownsMpi_)
      MPI_Finalize();
    return nullptr;
  }
  MPI_Comm base =
      requested ? *static_cast<const MPI_Comm *>(requested) : MPI_COMM_WORLD;
  int code = MPI_Comm_dup(base, &communicator->comm_);
  if (code != MPI_SUCCESS) {
    error = mpiError("MPI_Comm_dup", code);
    return nullptr;
  }
  MPI_Comm_set_errhandler(communicator->comm_, MPI_ERRORS_RETURN);
  MPI_Comm_rank(communicator->comm_, &communicator->rank_);
  MPI_Comm_size(communicator->comm_, &communicator->size_);
  communicator->thread_ =
      std::thread([raw = communicator.get()] { raw->run(); });
  markCommunicatorInUse();
  processCommunicator = communicator;
  keptCommunicator = new std::shared_ptr<MpiCommunicator>(communicator);
  // Runs at exit, or when this library is unloaded (glibc runs a shared
  // object's atexit handlers at dlclose).
  std::atexit(stopAtExit);
  return communicator;
}

/// What both launches of a bucket share.
struct BucketKernel : PreparedKernel {
  std::shared_ptr<MpiCommunicator> communicator;
  std::shared_ptr<Buckets> buckets;
  std::shared_ptr<CommunicationTimes> times;
  int64_t bucket = 0;
  std::vector<size_t> elements; ///< of each gradient, in order
  size_t total = 0;
  size_t scratchBytes() const override { return 0; }
};

struct StartKernel final : BucketKernel {
  bool run(void *const *inputs, void *const *outputs, void *,
           std::string &error) override {
    float *staging = static_cast<float *>(outputs[0]);
    size_t offset = 0;
    for (size_t i = 0; i < elements.size(); ++i) {
      // A gradient reduced in place is its own staging buffer.
      if (inputs[i] != staging + offset)
        std::memcpy(staging + offset, inputs[i], elements[i] * sizeof(float));
      offset += elements[i];
    }
    auto job = std::make_shared<Job>();
    const SharedArenas *shared = buckets->shared.get();
    if (shared && shared->holds(staging, total * sizeof(float)))
      countIn(*job, *shared, staging);
    else
      job->name = "MPI_Allreduce";
    MPI_Comm comm = communicator->comm();
    int count = static_cast<int>(total);
    if (!job->shared)
      job->call = [staging, count, comm] {
        return MPI_Allreduce(MPI_IN_PLACE, staging, count, MPI_FLOAT, MPI_SUM,
                             comm);
      };
    {
      std::lock_guard<std::mutex> lock(buckets->mutex);
      if (buckets->inFlight.count(bucket)) {
        error = "bucket " + std::to_string(bucket) + " started twice";
        return false;
      }
      buckets->inFlight[bucket] = job;
    }
    if (job->call)
      communicator->start(job);
    return true;
  }

private:
  /// The shared arenas' start: this process's bucket is in `staging`; the
  /// last process of the job to get here sums every arena's (a large
  /// bucket on its communication thread) and wakes the others.
  void countIn(Job &job, const SharedArenas &shared, const float *staging) {
    job.shared = true;
    job.round = ++rounds;
    BucketControl &control = shared.controls[bucket];
    // Releases this bucket's values to the process that sums them (and
    // acquires every other's, if that is this one).
    uint32_t before = control.arrived.fetch_add(1, std::memory_order_acq_rel);
    if (before + 1 != static_cast<uint32_t>(communicator->size()))
      return;
    // Everybody is in; nobody comes back for this bucket before its sum
    // is published, after this store.
    control.arrived.store(0, std::memory_order_relaxed);
    job.name = "summing a bucket in the shared arenas";
    job.call = [arenas = buckets->shared, offset = shared.offsetOf(staging),
                count = total, round = job.round, &control,
                scale = 1.0f / static_cast<float>(communicator->size()),
                times = times] {
      int64_t started = nowNanoseconds();
      sumIntoEveryArena(*arenas, offset, count, scale);
      // Counted before the waits wake: a step that returns has its time.
      times->busy += nowNanoseconds() - started;
      publishRound(control, round);
      return MPI_SUCCESS;
    };
    // Waking the communication thread costs more than a small bucket's
    // sum (tens of microseconds on a busy VM): up to 1 MiB, this thread
    // sums it (2 processes, Zen 4: the Transformer's job 92 -> 95 % of
    // linear scaling, ResNet-18's 85 -> 87 %, the MLP's 76 -> 82 %).
    constexpr size_t kSumHereBytes = size_t(1) << 20;
    if (total * sizeof(float) <= kSumHereBytes) {
      job.call();
      job.call = nullptr;
      job.done = true;
    }
  }

  uint32_t rounds = 0; ///< of this bucket, in this session
};

struct WaitKernel final : BucketKernel {
  bool run(void *const *inputs, void *const *outputs, void *,
           std::string &error) override {
    std::shared_ptr<Job> job;
    {
      std::lock_guard<std::mutex> lock(buckets->mutex);
      auto it = buckets->inFlight.find(bucket);
      if (it == buckets->inFlight.end()) {
        error = "bucket " + std::to_string(bucket) + " was not started";
        return false;
      }
      job = it->second;
      buckets->inFlight.erase(it);
    }
    int64_t started = nowNanoseconds();
    if (job->shared) {
      waitForRound(buckets->shared->controls[bucket], job->round);
      times->waited += nowNanoseconds() - started;
      // Already the mean, in this arena's staging buffer.
      const float *staging = static_cast<const float *>(inputs[0]);
      size_t offset = 0;
      for (size_t i = 0; i < elements.size(); ++i) {
        if (outputs[i] != staging + offset)
          std::memcpy(outputs[i], staging + offset,
                      elements[i] * sizeof(float));
        offset += elements[i];
      }
      return true;
    }
    bool ok = communicator->wait(job, error);
    times->waited += nowNanoseconds() - started;
    times->busy += job->nanoseconds;
    if (!ok)
      return false;
    const float *staging = static_cast<const float *>(inputs[0]);
    int processes = communicator->size();
    float scale = 1.0f / static_cast<float>(processes);
    size_t offset = 0;
    for (size_t i = 0; i < elements.size(); ++i) {
      float *out = static_cast<float *>(outputs[i]);
      if (processes == 1) {
        // The sum over one process is the mean: only unpack (a gradient
        // reduced in place is already where it belongs).
        if (out != staging + offset)
          std::memcpy(out, staging + offset, elements[i] * sizeof(float));
      } else {
        for (size_t k = 0; k < elements[i]; ++k)
          out[k] = staging[offset + k] * scale;
      }
      offset += elements[i];
    }
    return true;
  }
};

template <typename Kernel>
std::unique_ptr<PreparedKernel> prepareBucket(const Launch &launch,
                                              LibraryContext &libraries,
                                              std::string &error) {
  bool start = std::is_same_v<Kernel, StartKernel>;
  const std::vector<OperandInfo> &gradients =
      start ? launch.inputs : launch.outputs;
  const std::vector<OperandInfo> &staging =
      start ? launch.outputs : launch.inputs;
  if (launch.str("reduction", "mean") != "mean") {
    error = "unknown reduction '" + launch.str("reduction") + "' (mean)";
    return nullptr;
  }
  auto kernel = std::make_unique<Kernel>();
  for (const OperandInfo &gradient : gradients) {
    if (gradient.dtype != DType::F32) {
      error = "gradients must be f32";
      return nullptr;
    }
    kernel->elements.push_back(static_cast<size_t>(gradient.numElements()));
    kernel->total += kernel->elements.back();
  }
  if (gradients.empty() || staging.size() != 1 ||
      staging[0].dtype != DType::F32 ||
      static_cast<size_t>(staging[0].numElements()) != kernel->total) {
    error = "the staging buffer must be f32 and hold every gradient";
    return nullptr;
  }
  if (kernel->total > static_cast<size_t>(INT32_MAX)) {
    error = "a bucket of more than 2^31 - 1 elements";
    return nullptr;
  }
  if (!libraries.communicator) {
    std::shared_ptr<MpiCommunicator> communicator = MpiCommunicator::get(error);
    if (!communicator)
      return nullptr;
    libraries.communicator = communicator;
    libraries.collectives = std::make_shared<Buckets>();
    libraries.communicationTimes = std::make_shared<CommunicationTimes>();
  }
  kernel->communicator =
      std::static_pointer_cast<MpiCommunicator>(libraries.communicator);
  kernel->buckets = std::static_pointer_cast<Buckets>(libraries.collectives);
  kernel->times = libraries.communicationTimes;
  kernel->bucket = launch.i64("bucket", -1);
  if (kernel->bucket < 0) {
    error = "a bucket needs its index";
    return nullptr;
  }
  {
    std::lock_guard<std::mutex> lock(kernel->buckets->mutex);
    kernel->buckets->count =
        std::max(kernel->buckets->count, kernel->bucket + 1);
  }
  return kernel;
}

} // namespace

void registerMpiKernels() {
  registerPreparedKernel("comm.all_reduce_start", "mpi",
                         prepareBucket<StartKernel>);
  registerPreparedKernel("comm.all_reduce_wait", "mpi",
                         prepareBucket<WaitKernel>);
}

} // namespace trainc::rt
