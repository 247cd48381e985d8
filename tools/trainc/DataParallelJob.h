//===- DataParallelJob.h - `trainc train` as a process of a job -*- C++ -*-===//
//
// A library built with --data-parallel and run under `mpirun -np N` is one
// process of a job: what `trainc train` needs to know of the job (rank,
// size, sums over it) and how it shares the job's data and cores.
//
//===----------------------------------------------------------------------===//
#ifndef TRAINC_TOOLS_TRAINC_DATAPARALLELJOB_H
#define TRAINC_TOOLS_TRAINC_DATAPARALLELJOB_H

#include "tools/trainc/Datasets.h"
#include "tools/trainc/ModelLibrary.h"

#include <cstdint>
#include <string>
#include <vector>

namespace trainc::cli {

/// The data-parallel job this process trains in (one process unless the
/// library was built with --data-parallel and runs under a launcher).
struct World {
  int32_t rank = 0, size = 1;
  const ModelApi *api = nullptr;
  trainc_session *session = nullptr;

  bool root() const { return rank == 0; }
  /// Sums `values` over the job (every process calls it alike); false,
  /// with an error logged, if the library could not.
  bool sum(std::vector<double> &values) const;
};

/// The job's size as its launcher announced it (Open MPI's mpirun, PMI),
/// before any library is loaded: the batch a model is compiled for when
/// --feed gives the job's batch. 1 outside a launcher.
int64_t launcherWorldSize();

/// `requested` threads, where 0 (all cores) is this process's share of
/// the machine's cores when several processes of a job run on it.
int threadsPerProcess(int requested);

/// In a job of several processes, a fixed batch file holds the job's
/// batch: this process keeps every size-th row from its rank. False, with
/// an error, where the rows are not size times the library's batch.
bool takeShard(HostArray &array, const Argument &argument, const World &world,
               const std::string &what);

} // namespace trainc::cli

#endif
