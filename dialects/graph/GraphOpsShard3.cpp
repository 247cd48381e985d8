//===- GraphOpsShard3.cpp - generated graph op definitions, shard 3 ------===//
// mlir-tblgen splits the op definitions into shards (-op-shard-count in
// CMakeLists.txt) so that they compile in parallel; this file is one.
#include "dialects/graph/GraphOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

#define GET_OP_DEFS_3
#include "dialects/graph/GraphOps.cpp.inc"
