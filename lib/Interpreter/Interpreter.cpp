//===- Interpreter.cpp - runs graph functions on host tensors -------------===//
//
// The driver: checks the arguments, walks the function's ops in order,
// runs each through its kernel (or follows a func.call), and after every
// op gives the results their dtypes, rounds them to their element types and
// checks their shapes against the op's result types.
//
//===----------------------------------------------------------------------===//
#include "lib/Interpreter/Kernels.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/SymbolTable.h"

#include <string>

using namespace mlir;

namespace trainc {

namespace interpreter {

static const KernelTable &kernelTable() {
  static const KernelTable table = [] {
    KernelTable t;
    registerElementwiseKernels(t);
    registerTensorKernels(t);
    registerNeuralKernels(t);
    registerBackwardKernels(t);
    registerTrainingKernels(t);
    return t;
  }();
  return table;
}

namespace {

/// Deep enough for any real call graph, shallow enough to stop a recursive
/// one before the stack does.
constexpr unsigned kMaxCallDepth = 64;

std::string describe(Operation *op) {
  std::string text = op->getName().getStringRef().str() + " at ";
  llvm::raw_string_ostream stream(text);
  op->getLoc().print(stream);
  return text;
}

llvm::Error opError(Operation *op, const llvm::Twine &message) {
  return kernelError(describe(op) + ": " + message);
}

/// Rounds every element to `tensor`'s dtype (floats stay exact in fp64).
void roundElements(HostTensor &tensor, const InterpreterOptions &options) {
  bool floating = tensor.dtype == DType::F32 || tensor.dtype == DType::F64 ||
                  tensor.dtype == DType::F16 || tensor.dtype == DType::BF16;
  if (floating && options.fp64)
    return;
  for (double &value : tensor.data)
    value = roundTo(tensor.dtype, value);
}

/// Checks that `tensor` fits `type` (a dynamic dim matches any size).
llvm::Error checkFits(const HostTensor &tensor, Type type,
                      const llvm::Twine &what) {
  auto tensorType = dyn_cast<RankedTensorType>(type);
  if (!tensorType)
    return kernelError(what + " is not a ranked tensor");
  auto dtype = dtypeOf(tensorType.getElementType());
  if (!dtype)
    return dtype.takeError();
  if (tensor.dtype != *dtype)
    return kernelError(what + " has dtype " + dtypeName(tensor.dtype) +
                       ", expected " + dtypeName(*dtype));
  bool shapeMatches =
      static_cast<int64_t>(tensor.shape.size()) == tensorType.getRank();
  for (size_t d = 0; shapeMatches && d < tensor.shape.size(); ++d)
    shapeMatches = tensorType.isDynamicDim(d) ||
                   tensorType.getDimSize(d) == tensor.shape[d];
  if (!shapeMatches)
    return kernelError(what + " has shape " + formatShape(tensor.shape) +
                       ", expected " + formatShape(tensorType.getShape()));
  if (static_cast<int64_t>(tensor.data.size()) != tensor.numElements())
    return kernelError(what + " holds " + std::to_string(tensor.data.size()) +
                       " values for shape " + formatShape(tensor.shape));
  return llvm::Error::success();
}

class Driver {
public:
  explicit Driver(const InterpreterOptions &options) : options(options) {}

  llvm::Expected<std::vector<HostTensor>>
  call(func::FuncOp function, ArrayRef<HostTensor> arguments, unsigned depth);

private:
  /// Runs one op other than func.return, storing its results in `values`.
  llvm::Error run(Operation *op, Values &values, unsigned depth);
  /// Gives a kernel's results their dtypes, rounds and checks them.
  llvm::Error finish(Operation *op, std::vector<HostTensor> &results);

  const InterpreterOptions &options;
};

llvm::Expected<std::vector<HostTensor>>
Driver::call(func::FuncOp function, ArrayRef<HostTensor> arguments,
             unsigned depth) {
  std::string name = "@" + function.getSymName().str();
  if (depth > kMaxCallDepth)
    return kernelError(name + ": calls nest deeper than " +
                       std::to_string(kMaxCallDepth) + " (recursion?)");
  if (function.isExternal())
    return kernelError(name + " has no body");
  if (!function.getBody().hasOneBlock())
    return kernelError(name + " has more than one block");
  Block &body = function.getBody().front();
  if (arguments.size() != body.getNumArguments())
    return kernelError(name + " takes " +
                       std::to_string(body.getNumArguments()) +
                       " arguments, got " + std::to_string(arguments.size()));

  Values values(options.fp64);
  for (auto [index, argument] : llvm::enumerate(body.getArguments())) {
    HostTensor tensor = arguments[index];
    if (auto error = checkFits(tensor, argument.getType(),
                               name + " argument " + std::to_string(index)))
      return std::move(error);
    roundElements(tensor, options);
    values.set(argument, std::move(tensor));
  }

  for (Operation &op : body) {
    if (auto returnOp = dyn_cast<func::ReturnOp>(op)) {
      std::vector<HostTensor> results;
      for (Value operand : returnOp.getOperands())
        results.push_back(values[operand]);
      return results;
    }
    if (auto error = run(&op, values, depth))
      return std::move(error);
  }
  return kernelError(name + " does not end in func.return");
}

llvm::Error Driver::run(Operation *op, Values &values, unsigned depth) {
  if (op->getNumRegions() != 0)
    return opError(op, "ops with regions are not supported");
  std::vector<HostTensor> results;
  if (auto callOp = dyn_cast<func::CallOp>(op)) {
    auto callee = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
        op, callOp.getCalleeAttr());
    if (!callee)
      return opError(op, "the callee " + callOp.getCallee() +
                             " is not a func.func of the module");
    std::vector<HostTensor> arguments;
    for (Value operand : callOp.getOperands())
      arguments.push_back(values[operand]);
    auto called = call(callee, arguments, depth + 1);
    if (!called)
      return opError(op, llvm::toString(called.takeError()));
    results = std::move(*called);
  } else {
    const Kernel *kernel = kernelTable().lookup(op->getName().getStringRef());
    if (!kernel)
      return opError(op, "the interpreter has no kernel for this op");
    auto computed = (*kernel)(op, values);
    if (!computed)
      return opError(op, llvm::toString(computed.takeError()));
    results = std::move(*computed);
  }
  if (auto error = finish(op, results))
    return error;
  for (auto [value, tensor] : llvm::zip(op->getResults(), results))
    values.set(value, std::move(tensor));
  return llvm::Error::success();
}

llvm::Error Driver::finish(Operation *op, std::vector<HostTensor> &results) {
  if (results.size() != op->getNumResults())
    return opError(op, "internal: produced " + std::to_string(results.size()) +
                           " results for " +
                           std::to_string(op->getNumResults()));
  for (auto [index, tensor] : llvm::enumerate(results)) {
    auto type = dyn_cast<RankedTensorType>(op->getResult(index).getType());
    if (!type)
      return opError(op, "result " + std::to_string(index) +
                             " is not a ranked tensor");
    auto dtype = dtypeOf(type.getElementType());
    if (!dtype)
      return opError(op, llvm::toString(dtype.takeError()));
    tensor.dtype = *dtype;
    // A mismatch here is a bug in the kernel or in the op's inference.
    if (auto error = checkFits(tensor, type,
                               "internal: result " + std::to_string(index)))
      return opError(op, llvm::toString(std::move(error)));
    roundElements(tensor, options);
  }
  return llvm::Error::success();
}

} // namespace
} // namespace interpreter

bool canInterpret(llvm::StringRef opName) {
  return opName == func::CallOp::getOperationName() ||
         opName == func::ReturnOp::getOperationName() ||
         interpreter::kernelTable().lookup(opName) != nullptr;
}

llvm::Expected<std::vector<HostTensor>>
interpret(func::FuncOp function, ArrayRef<HostTensor> arguments,
          const InterpreterOptions &options) {
  interpreter::Driver driver(options);
  return driver.call(function, arguments, /*depth=*/0);
}

} // namespace trainc
