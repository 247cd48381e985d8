//===- LoopOps.cpp - the loop dialect -------------------------------------===//
#include "dialects/loop/LoopOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/TypeSwitch.h"

#include <functional>

using namespace mlir;
using namespace trainc::loop;

#include "dialects/loop/LoopDialect.cpp.inc"

/// `[size, ...]`, possibly empty.
static ParseResult parseTileSizes(AsmParser &parser,
                                  SmallVector<int64_t> &sizes) {
  return parser.parseCommaSeparatedList(AsmParser::Delimiter::Square, [&] {
    return parser.parseInteger(sizes.emplace_back());
  });
}

static void printTileSizes(AsmPrinter &printer, ArrayRef<int64_t> sizes) {
  printer << '[';
  llvm::interleaveComma(sizes, printer);
  printer << ']';
}

#define GET_ATTRDEF_CLASSES
#include "dialects/loop/LoopAttrs.cpp.inc"

void LoopDialect::initialize() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dialects/loop/LoopAttrs.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "dialects/loop/LoopOps.cpp.inc"
      >();
}

LogicalResult LoopDialect::verifyOperationAttribute(Operation *op,
                                                    NamedAttribute attribute) {
  if (attribute.getName() == kKernelAttrName) {
    if (!isa<UnitAttr>(attribute.getValue()))
      return op->emitError() << kKernelAttrName << " must be a unit attribute";
    return success();
  }
  if (attribute.getName() != kCheckAttrName)
    return op->emitError() << "unknown attribute " << attribute.getName()
                           << " of the loop dialect";
  auto check = dyn_cast<CheckAttr>(attribute.getValue());
  auto function = dyn_cast<FunctionOpInterface>(op);
  if (!check || !function || !op->hasAttr(kKernelAttrName))
    return op->emitError() << kCheckAttrName
                           << " must be a #loop.check on a loop kernel";
  int64_t status = check.getStatus();
  auto type = status >= 0 && status < function.getNumArguments()
                  ? dyn_cast<MemRefType>(function.getArgumentTypes()[status])
                  : MemRefType();
  if (!type || type.getRank() != 0 || !type.getElementType().isInteger(64))
    return op->emitError() << "the status of " << kCheckAttrName
                           << " must be a memref<i64> argument";
  return success();
}

std::string trainc::loop::nestFunctionName(StringRef kernel, unsigned index) {
  return (kernel + "_nest" + Twine(index)).str();
}

int64_t NestOp::getNumBlocks() {
  ScheduleAttr schedule = getSchedule();
  if (schedule.getParallel() < 0)
    return 1;
  int64_t extent = getDomain()[schedule.getParallel()];
  int64_t tile = schedule.getTile()[schedule.getParallel()];
  return std::max<int64_t>(1, (extent + tile - 1) / tile);
}

bool NestOp::isReduction(unsigned dim) {
  return cast<StringAttr>(getIterators()[dim]).getValue() == "reduction";
}

bool NestOp::isWrapping(unsigned i) {
  std::optional<ArrayRef<int64_t>> wrapping = getWrappingInputs();
  return wrapping && llvm::is_contained(*wrapping, static_cast<int64_t>(i));
}

std::optional<AffineForm> trainc::loop::getFlatForm(AffineMap map,
                                                    MemRefType type) {
  AffineForm flat;
  flat.coefficients.assign(map.getNumDims(), 0);
  int64_t stride = 1;
  for (int64_t axis = type.getRank() - 1; axis >= 0; --axis) {
    std::optional<AffineForm> form =
        getAffineForm(map.getResult(axis), map.getNumDims());
    if (!form)
      return std::nullopt;
    for (auto [sum, coefficient] :
         llvm::zip(flat.coefficients, form->coefficients))
      sum += coefficient * stride;
    flat.constant += form->constant * stride;
    stride *= type.getDimSize(axis);
  }
  return flat;
}

LogicalResult NestOp::verify() {
  ArrayRef<int64_t> domain = getDomain();
  unsigned rank = domain.size();
  if (llvm::any_of(domain, [](int64_t extent) { return extent < 0; }))
    return emitOpError("domain extents must be non-negative");
  if (getOutputs().empty())
    return emitOpError("writes no output");
  if (getIterators().size() != rank)
    return emitOpError("has ") << getIterators().size()
                               << " iterators for a domain of rank " << rank;
  for (Attribute iterator : getIterators()) {
    StringRef kind = cast<StringAttr>(iterator).getValue();
    if (kind != "parallel" && kind != "reduction")
      return emitOpError("unknown iterator '") << kind << "'";
  }

  // Operands: one map of linear forms each, every element in bounds.
  SmallVector<Value> operands(getInputs());
  llvm::append_range(operands, getOutputs());
  if (getIndexingMaps().size() != operands.size())
    return emitOpError("has ") << getIndexingMaps().size()
                               << " indexing maps for " << operands.size()
                               << " operands";
  unsigned numInputs = getInputs().size();
  bool empty = llvm::is_contained(domain, 0);
  if (std::optional<ArrayRef<int64_t>> wrapping = getWrappingInputs())
    for (auto [position, i] : llvm::enumerate(*wrapping))
      if (i < 0 || i >= static_cast<int64_t>(numInputs) ||
          llvm::is_contained(wrapping->take_front(position), i))
        return emitOpError("wrapping input ")
               << i << " is not an input, or is listed twice";
  for (auto [i, operand] : llvm::enumerate(operands)) {
    AffineMap map = cast<AffineMapAttr>(getIndexingMaps()[i]).getValue();
    auto type = cast<MemRefType>(operand.getType());
    bool isOutput = i >= numInputs;
    if (map.getNumDims() != rank || map.getNumSymbols() != 0)
      return emitOpError("indexing map ")
             << i << " must have " << rank << " dimensions and no symbols";
    if (map.getNumResults() != type.getRank())
      return emitOpError("indexing map ")
             << i << " has " << map.getNumResults()
             << " results for a buffer of rank " << type.getRank();
    if (!type.getLayout().isIdentity())
      return emitOpError("buffers must have the identity layout");
    SmallVector<unsigned> outputDims;
    for (auto [axis, expr] : llvm::enumerate(map.getResults())) {
      std::optional<AffineForm> form = getAffineForm(expr, rank);
      if (!form)
        return emitOpError("indexing map ")
               << i << " result " << axis
               << " is not a linear function of the dimensions";
      // Outputs: no two points of the domain but those of a reduction
      // write one element. A result is one dimension of its own, or sums
      // reduction dimensions only (a scatter that accumulates, such as a
      // window's gradient).
      if (isOutput) {
        std::optional<unsigned> dim = form->singleDim();
        bool scatter = !dim && llvm::all_of(llvm::seq<unsigned>(0, rank),
                                            [&](unsigned d) {
                                              return form->coefficients[d] ==
                                                         0 ||
                                                     isReduction(d);
                                            });
        if (!scatter && (!dim || llvm::is_contained(outputDims, *dim)))
          return emitOpError("output map ")
                 << i - numInputs
                 << " must index each axis by its own dimension (times a "
                    "non-zero step, plus an offset) or by a sum of "
                    "reduction dimensions";
        if (dim)
          outputDims.push_back(*dim);
      }
      if (!isOutput && isWrapping(i)) {
        // Bounded below, on the element's row-major offset; each result
        // is a view's axis (LowerLoopNests.cpp).
        std::optional<unsigned> dim = form->singleDim();
        if (!form->isConstant() && (!dim || form->coefficients[*dim] < 0))
          return emitOpError("wrapping input ")
                 << i << " result " << axis
                 << " must be a dimension times a positive step, plus an "
                    "offset, or a constant";
        continue;
      }
      if (empty)
        continue;
      auto [least, greatest] = form->range(domain);
      if (least < 0 || greatest >= type.getDimSize(axis))
        return emitOpError("operand ")
               << i << " has size " << type.getDimSize(axis) << " on axis "
               << axis << " but the nest reaches [" << least << ", "
               << greatest << "] there";
    }
  }

  // Wrapping inputs: every element read lies inside the buffer.
  for (unsigned i = 0; i < numInputs && !empty; ++i) {
    if (!isWrapping(i))
      continue;
    auto type = cast<MemRefType>(operands[i].getType());
    AffineMap map = cast<AffineMapAttr>(getIndexingMaps()[i]).getValue();
    auto [least, greatest] = getFlatForm(map, type)->range(domain);
    if (least < 0 || greatest >= type.getNumElements())
      return emitOpError("wrapping input ")
             << i << " has " << type.getNumElements()
             << " elements but the nest reaches offsets [" << least << ", "
             << greatest << "]";
  }

  // The body: one scalar per operand in, one per output out.
  Block &body = getBody().front();
  if (body.getNumArguments() != operands.size())
    return emitOpError("body takes ") << body.getNumArguments()
                                      << " arguments for " << operands.size()
                                      << " operands";
  for (auto [argument, operand] : llvm::zip(body.getArguments(), operands))
    if (argument.getType() !=
        cast<MemRefType>(operand.getType()).getElementType())
      return emitOpError("body argument ")
             << argument.getArgNumber() << " is " << argument.getType()
             << ", not the element type of its buffer";
  auto yield = dyn_cast<YieldOp>(body.getTerminator());
  if (!yield)
    return emitOpError("body must end in loop.yield");
  if (yield.getValues().size() != getOutputs().size())
    return emitOpError("body yields ") << yield.getValues().size()
                                       << " values for "
                                       << getOutputs().size() << " outputs";
  for (auto [value, output] : llvm::zip(yield.getValues(), getOutputs()))
    if (value.getType() != cast<MemRefType>(output.getType()).getElementType())
      return emitOpError("body yields ")
             << value.getType() << " for an output of "
             << cast<MemRefType>(output.getType()).getElementType();

  // The schedule.
  ScheduleAttr schedule = getSchedule();
  if (schedule.getTile().size() != rank)
    return emitOpError("schedule has ")
           << schedule.getTile().size() << " tile sizes for a domain of rank "
           << rank;
  if (llvm::any_of(schedule.getTile(), [](int64_t size) { return size < 1; }))
    return emitOpError("tile sizes must be at least 1");
  int64_t parallel = schedule.getParallel();
  if (parallel >= static_cast<int64_t>(rank) || parallel < -1)
    return emitOpError("parallel dimension ")
           << parallel << " is not a dimension of the domain";
  // Maps whose results sum dimensions are lowered as upstream lowers
  // convolutions without a vectorizer: by scalar loops, over whole buffers.
  bool sums = llvm::any_of(getIndexingMaps(), [&](Attribute attr) {
    return llvm::any_of(
        cast<AffineMapAttr>(attr).getValue().getResults(), [&](AffineExpr e) {
          std::optional<AffineForm> form = getAffineForm(e, rank);
          return !form->singleDim() && !form->isConstant();
        });
  });
  if (sums && schedule.getVectorize())
    return emitOpError("cannot vectorize a nest whose indexing maps sum "
                       "dimensions");
  if (parallel >= 0) {
    if (isReduction(parallel))
      return emitOpError("parallel dimension ")
             << parallel << " is a reduction";
    for (auto [i, attr] : llvm::enumerate(getIndexingMaps()))
      for (AffineExpr e : cast<AffineMapAttr>(attr).getValue().getResults()) {
        std::optional<AffineForm> form = getAffineForm(e, rank);
        if (form->coefficients[parallel] != 0 && !form->singleDim())
          return emitOpError("parallel dimension ")
                 << parallel << " is summed with others in indexing map "
                 << i;
        // A block of the parallel dimension is a view of each buffer,
        // which steps forward.
        if (form->coefficients[parallel] < 0)
          return emitOpError("parallel dimension ")
                 << parallel << " steps backwards in indexing map " << i;
      }
    for (unsigned i = 0; i < getOutputs().size(); ++i) {
      AffineMap map =
          cast<AffineMapAttr>(getIndexingMaps()[numInputs + i]).getValue();
      if (!map.isFunctionOfDim(parallel))
        return emitOpError("output ")
               << i << " does not depend on the parallel dimension "
               << parallel << " (threads would write the same elements)";
    }
  }
  return success();
}

LogicalResult IndexOp::verify() {
  int64_t rank = cast<NestOp>((*this)->getParentOp()).getDomain().size();
  if (static_cast<int64_t>(getDim()) >= rank)
    return emitOpError("dimension ")
           << getDim() << " is not a dimension of the domain (rank " << rank
           << ")";
  return success();
}

std::optional<unsigned> AffineForm::singleDim() const {
  std::optional<unsigned> dim;
  for (auto [d, coefficient] : llvm::enumerate(coefficients)) {
    if (coefficient == 0)
      continue;
    if (dim)
      return std::nullopt;
    dim = d;
  }
  return dim;
}

bool AffineForm::isConstant() const {
  return llvm::all_of(coefficients, [](int64_t c) { return c == 0; });
}

std::pair<int64_t, int64_t> AffineForm::range(ArrayRef<int64_t> domain) const {
  int64_t least = constant, greatest = constant;
  for (auto [coefficient, extent] : llvm::zip(coefficients, domain)) {
    int64_t reach = coefficient * (extent - 1);
    least += std::min<int64_t>(0, reach);
    greatest += std::max<int64_t>(0, reach);
  }
  return {least, greatest};
}

std::optional<AffineForm> trainc::loop::getAffineForm(AffineExpr expr,
                                                      unsigned numDims) {
  AffineForm form;
  form.coefficients.assign(numDims, 0);
  // Adds `scale` times `e` to the form.
  std::function<bool(AffineExpr, int64_t)> add = [&](AffineExpr e,
                                                     int64_t scale) {
    if (auto c = dyn_cast<AffineConstantExpr>(e)) {
      form.constant += scale * c.getValue();
      return true;
    }
    if (auto d = dyn_cast<AffineDimExpr>(e)) {
      if (d.getPosition() >= numDims)
        return false;
      form.coefficients[d.getPosition()] += scale;
      return true;
    }
    auto binary = dyn_cast<AffineBinaryOpExpr>(e);
    if (!binary)
      return false;
    if (binary.getKind() == AffineExprKind::Add)
      return add(binary.getLHS(), scale) && add(binary.getRHS(), scale);
    if (binary.getKind() != AffineExprKind::Mul)
      return false;
    // A product has a constant factor (MLIR keeps it on the right).
    auto factor = dyn_cast<AffineConstantExpr>(binary.getRHS());
    return factor && add(binary.getLHS(), scale * factor.getValue());
  };
  if (!add(expr, 1))
    return std::nullopt;
  return form;
}

#define GET_OP_CLASSES
#include "dialects/loop/LoopOps.cpp.inc"
