//===- EinsumHandler.cpp - ONNX Einsum as transposes and a matmul --------===//
//
// Einsum with one or two operands and explicit subscripts, as attention
// layers write it ("bhid,bhjd->bhij", "bhij,bhjd->bhid"), becomes graph ops
// the compiler already differentiates:
//
//   1. an index of one operand that is in neither the other operand nor
//      the output is summed away (graph.reduce_sum);
//   2. with two operands, each index is a batch index (both operands and
//      the output), a contracted one (both operands, not the output), or a
//      free one (one operand and the output). A is transposed to
//      [batch, free A, contracted] and B to [batch, contracted, free B],
//      both reshaped to rank 3, multiplied (graph.matmul), reshaped to
//      [batch, free A, free B];
//   3. a transpose puts the result in the output's order.
//
// Not built: ellipsis ("..."), an index repeated within one operand (a
// diagonal), more than two operands, broadcasting a size-1 index against
// another size; each is an error naming the node.
//
//===----------------------------------------------------------------------===//
#include "lib/Import/ImportState.h"

#include "dialects/graph/GraphOps.h"

#include "llvm/ADT/StringExtras.h"

#include <map>

using namespace mlir;

namespace trainc::import {
namespace {

/// One operand on its way through the rewrite: its value and the index
/// letter of each of its dimensions.
struct Term {
  Value value;
  std::string indices;

  ArrayRef<int64_t> shape() const {
    return cast<RankedTensorType>(value.getType()).getShape();
  }
  int64_t size(char index) const { return shape()[indices.find(index)]; }
};

/// Sums away the dimensions of `term` whose index `keep` rejects.
LogicalResult sumAway(NodeImporter &n, Term &term,
                      llvm::function_ref<bool(char)> keep) {
  SmallVector<int64_t> axes;
  std::string kept;
  for (auto [axis, index] : llvm::enumerate(term.indices)) {
    if (keep(index))
      kept += index;
    else
      axes.push_back(axis);
  }
  if (axes.empty())
    return success();
  auto summed = n.create<graph::ReduceSumOp>(
      {term.value}, {n.arrayAttr("axes", axes), n.boolAttr("keepdims", false)});
  if (failed(summed))
    return failure();
  term = {*summed, kept};
  return success();
}

/// Transposes `term` so that its indices read `order` (a permutation of
/// them).
LogicalResult permute(NodeImporter &n, Term &term, StringRef order) {
  if (term.indices == order)
    return success();
  SmallVector<int64_t> perm;
  for (char index : order)
    perm.push_back(term.indices.find(index));
  auto transposed =
      n.create<graph::TransposeOp>({term.value}, {n.arrayAttr("perm", perm)});
  if (failed(transposed))
    return failure();
  term = {*transposed, order.str()};
  return success();
}

FailureOr<Value> reshape(NodeImporter &n, Value value,
                         ArrayRef<int64_t> shape) {
  if (cast<RankedTensorType>(value.getType()).getShape() == shape)
    return value;
  return n.create<graph::ReshapeOp>({value}, {n.arrayAttr("shape", shape)});
}

LogicalResult importEinsum(NodeImporter &n) {
  std::string equation = n.getString("equation", "");
  llvm::erase_if(equation, [](char c) { return c == ' '; });
  if (equation.find("...") != std::string::npos)
    return n.error("Einsum with an ellipsis ('" + equation +
                   "') is not supported yet");
  StringRef left = equation, output;
  bool explicitOutput = false;
  if (size_t arrow = equation.find("->"); arrow != std::string::npos) {
    left = StringRef(equation).take_front(arrow);
    output = StringRef(equation).drop_front(arrow + 2);
    explicitOutput = true;
  }
  SmallVector<StringRef> operands;
  left.split(operands, ',');
  int64_t numInputs = n.node().input_size();
  if (operands.size() > 2 || numInputs != static_cast<int64_t>(operands.size()))
    return n.error("Einsum '" + equation + "' has " +
                   std::to_string(operands.size()) +
                   " operand subscripts and " + std::to_string(numInputs) +
                   " inputs; one or two operands are supported");

  SmallVector<Term> terms;
  std::map<char, int64_t> sizes, uses;
  for (auto [i, indices] : llvm::enumerate(operands)) {
    auto type = n.inputType(i);
    if (failed(type))
      return failure();
    if (!isa<FloatType>(type->getElementType()))
      return n.error("Einsum of non-float tensors is not supported");
    if (static_cast<int64_t>(indices.size()) != type->getRank())
      return n.error("Einsum subscripts '" + indices.str() + "' name " +
                     std::to_string(indices.size()) +
                     " dimensions of a tensor of rank " +
                     std::to_string(type->getRank()));
    for (auto [axis, index] : llvm::enumerate(indices)) {
      if (!llvm::isAlpha(index))
        return n.error("Einsum '" + equation + "': '" + std::string(1, index) +
                       "' is not a subscript letter");
      if (indices.count(index) > 1)
        return n.error("Einsum '" + equation + "': index '" +
                       std::string(1, index) +
                       "' repeats within one operand (a diagonal), which is "
                       "not supported yet");
      int64_t size = type->getShape()[axis];
      auto [it, inserted] = sizes.try_emplace(index, size);
      if (!inserted && it->second != size)
        return n.error("Einsum '" + equation + "': index '" +
                       std::string(1, index) + "' has sizes " +
                       std::to_string(it->second) + " and " +
                       std::to_string(size));
      ++uses[index];
    }
    terms.push_back({*n.input(i), indices.str()});
  }
  std::string out;
  if (explicitOutput) {
    out = output.str();
    for (char index : out)
      if (!sizes.count(index) || llvm::count(out, index) > 1)
        return n.error("Einsum '" + equation + "': output index '" +
                       std::string(1, index) +
                       "' is not an input index, or repeats");
  } else {
    // Implicit output: the indices used once, in alphabetical order.
    for (auto [index, count] : uses)
      if (count == 1)
        out += index;
  }
  auto inOutput = [&](char index) {
    return out.find(index) != std::string::npos;
  };

  Value result;
  if (terms.size() == 1) {
    Term &a = terms[0];
    if (failed(sumAway(n, a, inOutput)) || failed(permute(n, a, out)))
      return failure();
    result = a.value;
  } else {
    Term &a = terms[0], &b = terms[1];
    auto in = [](const Term &t, char index) {
      return t.indices.find(index) != std::string::npos;
    };
    if (failed(
            sumAway(n, a, [&](char i) { return inOutput(i) || in(b, i); })) ||
        failed(sumAway(n, b, [&](char i) { return inOutput(i) || in(a, i); })))
      return failure();
    std::string batch, freeA, freeB, contracted;
    for (char index : out) {
      if (in(a, index) && in(b, index))
        batch += index;
      else if (in(a, index))
        freeA += index;
      else
        freeB += index;
    }
    for (char index : a.indices)
      if (in(b, index) && !inOutput(index))
        contracted += index;
    auto product = [&](StringRef indices) {
      int64_t p = 1;
      for (char index : indices)
        p *= sizes[index];
      return p;
    };
    if (failed(permute(n, a, batch + freeA + contracted)) ||
        failed(permute(n, b, batch + contracted + freeB)))
      return failure();
    int64_t nb = product(batch), m = product(freeA), k = product(contracted),
            nn = product(freeB);
    auto lhs = reshape(n, a.value, {nb, m, k});
    auto rhs = reshape(n, b.value, {nb, k, nn});
    if (failed(lhs) || failed(rhs))
      return failure();
    auto multiplied = n.create<graph::MatMulOp>({*lhs, *rhs});
    if (failed(multiplied))
      return failure();
    SmallVector<int64_t> dims;
    std::string order = batch + freeA + freeB;
    for (char index : order)
      dims.push_back(sizes[index]);
    auto unflattened = reshape(n, *multiplied, dims);
    if (failed(unflattened))
      return failure();
    Term c{*unflattened, order};
    if (failed(permute(n, c, out)))
      return failure();
    result = c.value;
  }
  n.setOutput(0, result);
  return success();
}

} // namespace

void registerEinsumHandler(HandlerTable &table) {
  table["Einsum"] = importEinsum;
}

} // namespace trainc::import
