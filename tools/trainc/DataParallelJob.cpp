//===- DataParallelJob.cpp - `trainc train` as a process of a job ---------===//
#include "tools/trainc/DataParallelJob.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <thread>

namespace trainc::cli {

bool World::sum(std::vector<double> &values) const {
  if (size == 1)
    return true;
  if (api->allReduceSum(session, values.data(),
                        static_cast<int32_t>(values.size())) != TRAINC_OK) {
    spdlog::error("rank {}: {}", rank, api->lastError());
    return false;
  }
  return true;
}

int64_t launcherWorldSize() {
  for (const char *name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"})
    if (const char *value = std::getenv(name)) {
      long long size = std::atoll(value);
      if (size > 0)
        return size;
    }
  return 1;
}

int threadsPerProcess(int requested) {
  if (requested != 0)
    return requested;
  const char *local = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  if (!local)
    return 0;
  int processes = std::max(1, std::atoi(local));
  unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  return std::max(1, static_cast<int>(cores) / processes);
}

bool takeShard(HostArray &array, const Argument &argument, const World &world,
               const std::string &what) {
  if (world.size == 1)
    return true;
  int64_t batch = argument.shape.empty() ? 0 : argument.shape.front();
  int64_t rows = array.shape.empty() ? 0 : array.shape.front();
  if (batch == 0 || rows != batch * world.size) {
    spdlog::error("{}: {} rows; a data-parallel job of {} processes on a "
                  "library of batch {} takes the job's batch of {} rows "
                  "(each process trains on one row in {})",
                  what, rows, world.size, batch, batch * world.size,
                  world.size);
    return false;
  }
  size_t rowBytes = array.bytes.size() / rows;
  std::string mine(rowBytes * batch, '\0');
  for (int64_t row = 0; row < batch; ++row)
    std::memcpy(&mine[row * rowBytes],
                &array.bytes[(row * world.size + world.rank) * rowBytes],
                rowBytes);
  array.bytes.assign(mine.begin(), mine.end());
  array.shape.front() = batch;
  return true;
}

} // namespace trainc::cli
