//===- SplitHandlers.cpp - ONNX Split, SplitToSequence, SequenceAt -------===//
//
// A split is one graph.slice per part. A sequence is a list of those
// slices: SplitToSequence (its split known at import time) makes the list,
// SequenceAt (a known position) picks one; no sequence value reaches the
// graph (torch 2.x's dynamo exporter writes torch.split that way).
//
//===----------------------------------------------------------------------===//
#include "lib/Import/ImportState.h"

#include "dialects/graph/GraphOps.h"

using namespace mlir;

namespace trainc::import {
namespace {

/// Input 0 cut along `axis` into consecutive parts of `sizes` (positive,
/// summing to the axis: checked by the caller).
FailureOr<SmallVector<Value>> splitAxis(NodeImporter &n, int64_t axis,
                                        ArrayRef<int64_t> sizes) {
  SmallVector<Value> parts;
  int64_t start = 0;
  for (int64_t size : sizes) {
    auto part = sliceAxis(n, *n.input(0), axis, start, start + size);
    if (failed(part))
      return failure();
    parts.push_back(*part);
    start += size;
  }
  return parts;
}

LogicalResult importSplit(NodeImporter &n) {
  auto type = n.inputType(0);
  if (failed(type))
    return failure();
  auto axis = n.normalizeAxis(n.getInt("axis", 0), type->getRank());
  if (failed(axis))
    return failure();
  int64_t dim = type->getDimSize(*axis);
  int64_t parts = n.numOutputs();
  SmallVector<int64_t> sizes;
  if (n.hasInput(1)) {
    auto given = n.knownInts(1, "Split split");
    if (failed(given))
      return failure();
    sizes = *given;
  } else {
    if (n.opset() >= 18) {
      parts = n.getInt("num_outputs", 0);
      if (parts != n.numOutputs())
        return n.error("num_outputs is " + std::to_string(parts) +
                       " but the node has " + std::to_string(n.numOutputs()) +
                       " outputs");
    }
    if (parts <= 0)
      return n.error("has no outputs");
    // Opset 18: ceil(dim / parts) each, the last smaller; before, equal.
    int64_t each = (dim + parts - 1) / parts;
    if (n.opset() < 18 && dim % parts != 0)
      return n.error("axis " + std::to_string(*axis) + " of size " +
                     std::to_string(dim) + " does not split into " +
                     std::to_string(parts) + " equal parts");
    for (int64_t i = 0, left = dim; i < parts; ++i, left -= each)
      sizes.push_back(std::min(each, left));
  }
  int64_t total = 0;
  for (int64_t size : sizes) {
    if (size <= 0)
      return n.error("split sizes must be positive, got " +
                     std::to_string(size));
    if (__builtin_add_overflow(total, size, &total))
      total = -1;
  }
  if (static_cast<int64_t>(sizes.size()) != n.numOutputs() || total != dim)
    return n.error("split sizes (" + std::to_string(sizes.size()) +
                   ") must be one per output (" +
                   std::to_string(n.numOutputs()) + ") and sum to " +
                   std::to_string(dim));
  auto pieces = splitAxis(n, *axis, sizes);
  if (failed(pieces))
    return failure();
  for (auto [i, piece] : llvm::enumerate(*pieces))
    n.setOutput(i, piece);
  return success();
}

/// SplitToSequence with a split known at import time (a chunk size: the
/// last chunk smaller, as torch.split's; or the sizes), and SequenceAt at a
/// known position: the sequence is a list of slices, never a value of its
/// own (torch 2.x's dynamo exporter writes torch.split so).
LogicalResult importSplitToSequence(NodeImporter &n) {
  auto type = n.inputType(0);
  if (failed(type))
    return failure();
  auto axis = n.normalizeAxis(n.getInt("axis", 0), type->getRank());
  if (failed(axis))
    return failure();
  if (!n.hasInput(1))
    return n.error("a split into single elements (no 'split' input) is not "
                   "supported");
  auto given = n.knownInts(1, "SplitToSequence split");
  if (failed(given))
    return failure();
  int64_t dim = type->getDimSize(*axis);
  SmallVector<int64_t> sizes = *given;
  if (n.known(1)->shape.empty()) { // a scalar: the size of each chunk
    int64_t each = sizes.front();
    if (each <= 0)
      return n.error("the split size must be positive");
    sizes.clear();
    for (int64_t left = dim; left > 0; left -= each)
      sizes.push_back(std::min(each, left));
  }
  int64_t start = 0;
  for (int64_t size : sizes) {
    if (size <= 0 || size > dim - start)
      return n.error("split sizes must be positive and sum to " +
                     std::to_string(dim));
    start += size;
  }
  if (start != dim)
    return n.error("split sizes must sum to " + std::to_string(dim));
  auto parts = splitAxis(n, *axis, sizes);
  if (failed(parts))
    return failure();
  n.setSequenceOutput(0, std::move(*parts));
  return success();
}

LogicalResult importSequenceAt(NodeImporter &n) {
  auto sequence = n.sequenceInput(0);
  if (failed(sequence))
    return failure();
  auto position = n.knownInts(1, "SequenceAt position");
  if (failed(position))
    return failure();
  int64_t count = static_cast<int64_t>(sequence->size());
  int64_t at = position->empty() ? 0 : position->front();
  if (position->size() != 1 || at < -count || at >= count)
    return n.error("position must be one index in [-" + std::to_string(count) +
                   ", " + std::to_string(count) + ")");
  n.setOutput(0, (*sequence)[at < 0 ? at + count : at]);
  return success();
}

} // namespace

void registerSplitHandlers(HandlerTable &table) {
  table["Split"] = importSplit;
  table["SplitToSequence"] = importSplitToSequence;
  table["SequenceAt"] = importSequenceAt;
}

} // namespace trainc::import
