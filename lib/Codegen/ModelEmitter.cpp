//===- ModelEmitter.cpp - kernel functions to LLVM IR ---------------------===//
//
// Each lowered function becomes
//
//   i32 trainc_model_NAME(ptr state, ptr arguments, ptr arena)
//
// a straight sequence of kernel calls: argument buffers are loaded from
// `arguments`, intermediates are `arena + offset` (from the memory plan),
// constants are globals. A library or reference kernel is a
// trainc_rt_launch call, and a launch that fails returns its status at
// once; its descriptor is also listed in `trainc_model_kernels`, which the
// runtime prepares when a session opens. A generated kernel is a call of
// each of its nest functions (lowered separately, see LoopToLLVM.h),
// through trainc_rt_parallel_for when the nest is split across threads;
// a kernel with a loop.check then fails the step with
// trainc_rt_check_failed when its status is not 0.
// Weights go in as one raw byte array, never as IR constants (by .incbin
// of a file written beside the library, or as one byte global). A profiling
// build brackets every launch with trainc_rt_profile_begin/end, numbering
// the launches in the order of the manifest's "profile" list; a
// --check-numerics build calls trainc_rt_check_numerics with a function's
// arguments when it starts and with every launch's buffers after it, each
// call described by an entry of the manifest's "numerics" list.
//
//===----------------------------------------------------------------------===//
#include "lib/Codegen/ModelEmitter.h"
#include "lib/Codegen/Descriptor.h"

#include "dialects/graph/GraphOps.h"
#include "dialects/kernel/BackendRegistry.h"
#include "dialects/kernel/KernelCost.h"
#include "dialects/kernel/KernelOps.h"
#include "dialects/kernel/Transforms/Passes.h"
#include "dialects/loop/LoopOps.h"
#include "dialects/loop/Transforms/LoopToGPU.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/Support/raw_ostream.h"

#include <nlohmann/json.hpp>

#include <fstream>
#include <set>

using namespace mlir;

namespace trainc::codegen {
namespace {

/// The bytes of a constant as the runtime reads them: dense, one byte per
/// i1, splats expanded.
llvm::Expected<std::string> constantBytes(ElementsAttr value) {
  auto dense = dyn_cast<DenseElementsAttr>(value);
  if (!dense)
    return llvm::createStringError("only dense constants are supported");
  Type element = dense.getElementType();
  std::string bytes;
  if (auto floatType = dyn_cast<FloatType>(element)) {
    unsigned width = floatType.getWidth() / 8;
    for (APFloat v : dense.getValues<APFloat>()) {
      APInt bits = v.bitcastToAPInt();
      uint64_t raw = bits.getZExtValue();
      bytes.append(reinterpret_cast<const char *>(&raw), width);
    }
    return bytes;
  }
  unsigned width = std::max(1u, element.getIntOrFloatBitWidth() / 8);
  for (APInt v : dense.getValues<APInt>()) {
    uint64_t raw = element.isInteger(1) ? v.getZExtValue() : v.getSExtValue();
    bytes.append(reinterpret_cast<const char *>(&raw), width);
  }
  return bytes;
}

struct Emitter {
  ModuleOp lowered;
  llvm::LLVMContext &context;
  llvm::Module &module;
  llvm::IRBuilder<> builder;
  llvm::PointerType *ptr;
  llvm::FunctionCallee launch, parallelFor, checkFailed, profileBegin,
      profileEnd, cudaLaunch, cudaCheck, cudaConstant, checkNumerics;
  const EmitTarget &target;
  /// The CUDA target: every constant, in trainc_model_constants' order.
  std::vector<std::pair<llvm::Constant *, uint64_t>> constants;
  /// Time every launch, and describe each in `profiled`; test buffers for
  /// non-finite values, and describe each test in `numerics`.
  const Instrumentation &instrument;
  nlohmann::json profiled = nlohmann::json::array();
  nlohmann::json numerics = nlohmann::json::array();
  /// Per nest function, its trainc_rt_parallel_for task.
  llvm::StringMap<llvm::Function *> tasks;
  unsigned globals = 0;
  /// Launches emitted so far in the current function (from 1).
  unsigned launches = 0;
  /// Every descriptor string, for trainc_model_kernels.
  std::vector<llvm::Constant *> descriptors;

  Emitter(ModuleOp lowered, llvm::LLVMContext &context, llvm::Module &module,
          const Instrumentation &instrument, const EmitTarget &target)
      : lowered(lowered), context(context), module(module), builder(context),
        ptr(llvm::PointerType::getUnqual(context)), target(target),
        instrument(instrument) {
    llvm::Type *i32 = builder.getInt32Ty(), *i64 = builder.getInt64Ty();
    cudaLaunch = module.getOrInsertFunction(
        "trainc_rt_cuda_launch",
        llvm::FunctionType::get(i32, {ptr, ptr, i64, i64, ptr, i32}, false));
    cudaCheck = module.getOrInsertFunction(
        "trainc_rt_cuda_check",
        llvm::FunctionType::get(i32, {ptr, ptr, ptr}, false));
    cudaConstant = module.getOrInsertFunction(
        "trainc_rt_cuda_constant",
        llvm::FunctionType::get(ptr, {ptr, i32}, false));
    launch = module.getOrInsertFunction(
        "trainc_rt_launch",
        llvm::FunctionType::get(builder.getInt32Ty(), {ptr, ptr, ptr, ptr},
                                false));
    parallelFor = module.getOrInsertFunction(
        "trainc_rt_parallel_for",
        llvm::FunctionType::get(builder.getVoidTy(),
                                {ptr, ptr, builder.getInt64Ty()}, false));
    checkFailed = module.getOrInsertFunction(
        "trainc_rt_check_failed",
        llvm::FunctionType::get(builder.getInt32Ty(),
                                {ptr, ptr, builder.getInt64Ty()}, false));
    profileBegin = module.getOrInsertFunction(
        "trainc_rt_profile_begin",
        llvm::FunctionType::get(builder.getVoidTy(), {ptr}, false));
    profileEnd = module.getOrInsertFunction(
        "trainc_rt_profile_end",
        llvm::FunctionType::get(builder.getVoidTy(),
                                {ptr, builder.getInt32Ty()}, false));
    checkNumerics = module.getOrInsertFunction(
        "trainc_rt_check_numerics",
        llvm::FunctionType::get(i32, {ptr, ptr, i32}, false));
  }

  /// "8x1x28x28, 16x1x3x3 -> 8x16x28x28": a launch's buffers.
  static std::string launchShapes(kernel::LaunchOp op) {
    auto shapesOf = [](ValueRange buffers) {
      std::string text;
      for (Value buffer : buffers) {
        auto type = cast<MemRefType>(buffer.getType());
        text += text.empty() ? "" : ", ";
        if (type.getRank() == 0)
          text += "scalar";
        for (auto [i, extent] : llvm::enumerate(type.getShape()))
          text += (i ? "x" : "") + std::to_string(extent);
      }
      return text;
    };
    return shapesOf(op.getInputs()) + " -> " + shapesOf(op.getOutputs());
  }

  /// In a profiling build: starts the clock of the next launch.
  void beginTimer(llvm::Value *state) {
    if (instrument.profile)
      builder.CreateCall(profileBegin, {state});
  }

  /// In a profiling build: charges the time since beginTimer to `op`, the
  /// next entry of the "profile" list.
  void endTimer(llvm::Value *state, kernel::LaunchOp op,
                func::FuncOp function) {
    if (!instrument.profile)
      return;
    builder.CreateCall(profileEnd, {state, builder.getInt32(profiled.size())});
    kernel::KernelCost cost = kernel::estimateCost(op);
    profiled.push_back({{"function", function.getSymName().str()},
                        {"kernel", op.getKernel().str()},
                        {"backend", op.getBackend().str()},
                        {"shapes", launchShapes(op)},
                        {"flops", cost.flops},
                        {"bytes", cost.bytes}});
  }

  /// In a --check-numerics build: calls trainc_rt_check_numerics on
  /// `pointers` (an array of `slots` pointers, which `store` fills) as
  /// `entry` describes them, and returns its status when it is not 0.
  /// Only float buffers are listed.
  void checkNumericsOf(nlohmann::json entry, llvm::Value *state,
                       llvm::Value *pointers, llvm::Function *function) {
    if (entry.at("operands").empty())
      return;
    int32_t id = numerics.size();
    numerics.push_back(std::move(entry));
    returnIfFailed(builder.CreateCall(checkNumerics,
                                      {state, pointers, builder.getInt32(id)}),
                   function);
  }

  /// The float buffer `type` as an entry of a "numerics" operand list, or
  /// null.
  static nlohmann::json numericsOperand(Type type, size_t slot,
                                        std::string label, bool output) {
    auto memref = dyn_cast<MemRefType>(type);
    if (!memref || !isa<FloatType>(memref.getElementType()))
      return nullptr;
    auto dtype = dtypeName(memref.getElementType());
    if (!dtype) {
      llvm::consumeError(dtype.takeError());
      return nullptr;
    }
    return {{"slot", slot},
            {"label", std::move(label)},
            {"dtype", *dtype},
            {"count", memref.getNumElements()},
            {"output", output}};
  }

  /// A function's arguments when it starts: everything but its outputs.
  void checkArguments(func::FuncOp function, llvm::Value *state,
                      llvm::Value *arguments, llvm::Function *llvmFunction) {
    nlohmann::json operands = nlohmann::json::array();
    for (BlockArgument argument : function.getArguments()) {
      unsigned i = argument.getArgNumber();
      auto name =
          function.getArgAttrOfType<StringAttr>(i, graph::kNameAttrName);
      auto role =
          function.getArgAttrOfType<StringAttr>(i, graph::kRoleAttrName);
      if (!name || !role || role.getValue() == "output")
        continue;
      nlohmann::json operand = numericsOperand(
          argument.getType(), i, role.str() + " '" + name.str() + "'", true);
      if (!operand.is_null())
        operands.push_back(std::move(operand));
    }
    checkNumericsOf({{"where", function.getSymName().str()},
                     {"arguments", true},
                     {"operands", std::move(operands)}},
                    state, arguments, llvmFunction);
  }

  /// A launch's inputs and outputs, once it is done.
  void checkLaunch(kernel::LaunchOp op, func::FuncOp function,
                   llvm::DenseMap<Value, llvm::Value *> &pointers,
                   llvm::Value *state, llvm::Value *checked,
                   llvm::Function *llvmFunction) {
    nlohmann::json operands = nlohmann::json::array();
    size_t slot = 0;
    auto add = [&](ValueRange buffers, const char *kind, bool output) {
      for (auto [i, buffer] : llvm::enumerate(buffers)) {
        nlohmann::json operand = numericsOperand(
            buffer.getType(), slot, kind + std::to_string(i), output);
        if (operand.is_null())
          continue;
        builder.CreateStore(pointers.lookup(buffer),
                            builder.CreateConstGEP1_64(ptr, checked, slot++));
        operands.push_back(std::move(operand));
      }
    };
    add(op.getInputs(), "input ", false);
    add(op.getOutputs(), "output ", true);
    std::string where = function.getSymName().str() + ": launch " +
                        std::to_string(launches) + ", " + op.getKernel().str() +
                        " (" + op.getBackend().str() + "; " + launchShapes(op) +
                        ")";
    checkNumericsOf({{"where", where}, {"operands", std::move(operands)}},
                    state, checked, llvmFunction);
  }

  llvm::GlobalVariable *bytesGlobal(llvm::StringRef bytes, llvm::StringRef name,
                                    bool exported) {
    auto *data = llvm::ConstantDataArray::getRaw(bytes, bytes.size(),
                                                 builder.getInt8Ty());
    auto *global = new llvm::GlobalVariable(
        module, data->getType(), /*isConstant=*/true,
        exported ? llvm::GlobalValue::ExternalLinkage
                 : llvm::GlobalValue::PrivateLinkage,
        data, name);
    global->setAlignment(llvm::Align(64));
    if (exported)
      global->setVisibility(llvm::GlobalValue::HiddenVisibility);
    return global;
  }

  llvm::Error emitFunction(func::FuncOp function) {
    auto *type = llvm::FunctionType::get(builder.getInt32Ty(), {ptr, ptr, ptr},
                                         false);
    auto *llvmFunction = llvm::Function::Create(
        type, llvm::GlobalValue::ExternalLinkage,
        "trainc_model_" + function.getSymName().str(), module);
    llvmFunction->setVisibility(llvm::GlobalValue::HiddenVisibility);
    llvm::Value *state = llvmFunction->getArg(0);
    llvm::Value *arguments = llvmFunction->getArg(1);
    llvm::Value *arena = llvmFunction->getArg(2);
    auto *entry = llvm::BasicBlock::Create(context, "entry", llvmFunction);
    builder.SetInsertPoint(entry);

    // Operand arrays big enough for every launch, reused.
    size_t maxInputs = 1, maxOutputs = 1, maxBuffers = 1;
    function.walk([&](kernel::LaunchOp op) {
      maxInputs = std::max(maxInputs, op.getInputs().size());
      maxOutputs = std::max(maxOutputs, op.getOutputs().size());
      maxBuffers = std::max<size_t>(maxBuffers, op->getNumOperands());
    });
    llvm::Value *inputs = builder.CreateAlloca(
        llvm::ArrayType::get(ptr, maxInputs), nullptr, "inputs");
    llvm::Value *outputs = builder.CreateAlloca(
        llvm::ArrayType::get(ptr, maxOutputs), nullptr, "outputs");
    llvm::Value *buffers = builder.CreateAlloca(
        llvm::ArrayType::get(ptr, maxBuffers), nullptr, "buffers");
    llvm::Value *checked =
        instrument.checkNumerics
            ? builder.CreateAlloca(llvm::ArrayType::get(ptr, maxBuffers),
                                   nullptr, "checked")
            : nullptr;
    launches = 0;

    llvm::DenseMap<Value, llvm::Value *> pointers;
    for (BlockArgument argument : function.getArguments()) {
      llvm::Value *slot = builder.CreateConstGEP1_64(ptr, arguments,
                                                     argument.getArgNumber());
      pointers[argument] = builder.CreateLoad(ptr, slot);
    }
    if (instrument.checkNumerics)
      checkArguments(function, state, arguments, llvmFunction);
    for (Operation &op : function.getBody().front()) {
      if (auto alloc = dyn_cast<kernel::AllocOp>(op)) {
        if (!alloc.getOffset())
          return llvm::createStringError(
              "a buffer has no arena offset (run --trainc-plan-memory)");
        pointers[alloc] = builder.CreateConstGEP1_64(
            builder.getInt8Ty(), arena, *alloc.getOffset());
      } else if (auto view = dyn_cast<kernel::ViewOp>(op)) {
        pointers[view] = pointers.lookup(view.getSource());
      } else if (auto constant = dyn_cast<kernel::ConstantOp>(op)) {
        auto bytes = constantBytes(constant.getValue());
        if (!bytes)
          return bytes.takeError();
        llvm::GlobalVariable *global =
            bytesGlobal(*bytes, "constant." + std::to_string(globals++), false);
        if (target.cuda) {
          // The device copy the session made of it.
          pointers[constant] = builder.CreateCall(
              cudaConstant, {state, builder.getInt32(constants.size())});
          constants.push_back({global, bytes->size()});
        } else {
          pointers[constant] = global;
        }
      } else if (auto launchOp = dyn_cast<kernel::LaunchOp>(op)) {
        ++launches;
        beginTimer(state);
        if (auto error =
                launchOp.getCallee()
                    ? emitGeneratedLaunch(launchOp, pointers, buffers, state,
                                          llvmFunction)
                : target.cuda &&
                        !kernel::backendRunsOn(launchOp.getBackend(), "cuda")
                    ? llvm::createStringError(
                          "the CUDA target runs cuBLAS, cuDNN and generated "
                          "kernels only; " +
                          launchOp.getKernel().str() + " is dispatched to " +
                          launchOp.getBackend().str())
                    : emitLaunch(launchOp, pointers, state, inputs, outputs,
                                 llvmFunction))
          return error;
        endTimer(state, launchOp, function);
        if (instrument.checkNumerics)
          checkLaunch(launchOp, function, pointers, state, checked,
                      llvmFunction);
      } else if (!isa<func::ReturnOp>(op)) {
        return llvm::createStringError("cannot emit " +
                                       op.getName().getStringRef().str());
      }
    }
    builder.CreateRet(builder.getInt32(0));
    return llvm::Error::success();
  }

  /// `void NAME(i64 begin, i64 end, ptr buffer...)`, defined by the
  /// lowered loop kernels.
  llvm::Function *nestFunction(StringRef name, unsigned numBuffers) {
    SmallVector<llvm::Type *> parameters = {builder.getInt64Ty(),
                                            builder.getInt64Ty()};
    parameters.append(numBuffers, ptr);
    auto *type = llvm::FunctionType::get(builder.getVoidTy(), parameters, false);
    return llvm::cast<llvm::Function>(
        module.getOrInsertFunction(name, type).getCallee());
  }

  /// `void NAME.task(ptr buffers, i64 begin, i64 end)`: the nest function
  /// with its buffers read from the array `trainc_rt_parallel_for` passes.
  llvm::Function *taskFor(llvm::Function *nest, unsigned numBuffers) {
    llvm::Function *&task = tasks[nest->getName()];
    if (task)
      return task;
    auto *type = llvm::FunctionType::get(
        builder.getVoidTy(), {ptr, builder.getInt64Ty(), builder.getInt64Ty()},
        false);
    task = llvm::Function::Create(type, llvm::GlobalValue::InternalLinkage,
                                  nest->getName() + ".task", module);
    llvm::IRBuilderBase::InsertPointGuard guard(builder);
    builder.SetInsertPoint(llvm::BasicBlock::Create(context, "entry", task));
    SmallVector<llvm::Value *> arguments = {task->getArg(1), task->getArg(2)};
    for (unsigned i = 0; i < numBuffers; ++i)
      arguments.push_back(builder.CreateLoad(
          ptr, builder.CreateConstGEP1_64(ptr, task->getArg(0), i)));
    builder.CreateCall(nest, arguments);
    builder.CreateRetVoid();
    return task;
  }

  /// A generated kernel: each of its nests in order, split across threads
  /// when its schedule says so. Generated code cannot fail while it runs;
  /// a loop.check is tested once the kernel is done.
  llvm::Error emitGeneratedLaunch(
      kernel::LaunchOp op, llvm::DenseMap<Value, llvm::Value *> &pointers,
      llvm::Value *buffers, llvm::Value *state, llvm::Function *llvmFunction) {
    auto kernelFunction = lowered.lookupSymbol<func::FuncOp>(*op.getCallee());
    if (!kernelFunction || !kernelFunction->hasAttr(loop::kKernelAttrName))
      return llvm::createStringError("a launch of " + op.getKernel().str() +
                                     " calls " + op.getCallee()->str() +
                                     ", which is not a loop kernel");
    unsigned numBuffers = op->getNumOperands();
    SmallVector<llvm::Value *> arguments(2, nullptr);
    for (auto [i, buffer] : llvm::enumerate(op->getOperands())) {
      arguments.push_back(pointers.lookup(buffer));
      builder.CreateStore(arguments.back(),
                          builder.CreateConstGEP1_64(ptr, buffers, i));
    }
    if (target.cuda)
      return emitGpuLaunch(kernelFunction, arguments, buffers, state,
                           llvmFunction);
    unsigned index = 0;
    for (loop::NestOp nest : kernelFunction.getBody().getOps<loop::NestOp>()) {
      llvm::Function *function = nestFunction(
          loop::nestFunctionName(kernelFunction.getSymName(), index++),
          numBuffers);
      int64_t blocks = nest.getNumBlocks();
      if (blocks == 1) {
        arguments[0] = builder.getInt64(0);
        arguments[1] = builder.getInt64(1);
        builder.CreateCall(function, arguments);
      } else {
        builder.CreateCall(parallelFor, {taskFor(function, numBuffers), buffers,
                                         builder.getInt64(blocks)});
      }
    }
    if (auto check = kernelFunction->getAttrOfType<loop::CheckAttr>(
            loop::kCheckAttrName)) {
      llvm::Value *status = builder.CreateLoad(
          builder.getInt64Ty(), arguments[2 + check.getStatus()]);
      auto *passed = llvm::BasicBlock::Create(context, "checked", llvmFunction);
      auto *failed =
          llvm::BasicBlock::Create(context, "check_failed", llvmFunction);
      builder.CreateCondBr(builder.CreateICmpEQ(status, builder.getInt64(0)),
                           passed, failed);
      builder.SetInsertPoint(failed);
      llvm::GlobalVariable *message = builder.CreateGlobalString(
          check.getMessage(), "check." + std::to_string(globals++), 0, &module);
      builder.CreateRet(
          builder.CreateCall(checkFailed, {state, message, status}));
      builder.SetInsertPoint(passed);
    }
    return llvm::Error::success();
  }

  /// Returns `status` from the function when it is not 0.
  void returnIfFailed(llvm::Value *status, llvm::Function *function) {
    auto *failed = llvm::BasicBlock::Create(context, "failed", function);
    auto *next = llvm::BasicBlock::Create(context, "next", function);
    builder.CreateCondBr(builder.CreateICmpNE(status, builder.getInt32(0)),
                         failed, next);
    builder.SetInsertPoint(failed);
    builder.CreateRet(status);
    builder.SetInsertPoint(next);
  }

  /// The CUDA target: each nest of the kernel is a GPU kernel of the same
  /// name (--trainc-loop-to-gpu), launched with the kernel's buffers in
  /// order; a loop.check is read back from the device after the last.
  llvm::Error emitGpuLaunch(func::FuncOp kernelFunction,
                            ArrayRef<llvm::Value *> arguments,
                            llvm::Value *buffers, llvm::Value *state,
                            llvm::Function *llvmFunction) {
    unsigned numBuffers = arguments.size() - 2;
    unsigned index = 0;
    for (loop::NestOp nest : kernelFunction.getBody().getOps<loop::NestOp>()) {
      std::string name =
          loop::nestFunctionName(kernelFunction.getSymName(), index++);
      loop::GpuSchedule shape = loop::gpuSchedule(nest, target.gpuBlockSize);
      if (shape.blocks == 0)
        continue; // an empty domain
      llvm::GlobalVariable *text = builder.CreateGlobalString(
          name, "gpu_kernel." + std::to_string(globals++), 0, &module);
      returnIfFailed(
          builder.CreateCall(cudaLaunch,
                             {state, text, builder.getInt64(shape.blocks),
                              builder.getInt64(shape.threads), buffers,
                              builder.getInt32(numBuffers)}),
          llvmFunction);
    }
    if (auto check = kernelFunction->getAttrOfType<loop::CheckAttr>(
            loop::kCheckAttrName)) {
      llvm::GlobalVariable *message = builder.CreateGlobalString(
          check.getMessage(), "check." + std::to_string(globals++), 0, &module);
      returnIfFailed(
          builder.CreateCall(
              cudaCheck, {state, arguments[2 + check.getStatus()], message}),
          llvmFunction);
    }
    return llvm::Error::success();
  }

  llvm::Error emitLaunch(kernel::LaunchOp op,
                         llvm::DenseMap<Value, llvm::Value *> &pointers,
                         llvm::Value *state, llvm::Value *inputs,
                         llvm::Value *outputs, llvm::Function *function) {
    if (op.getBackend().empty())
      return llvm::createStringError("a launch of " + op.getKernel().str() +
                                     " has no backend (run --trainc-dispatch)");
    auto descriptor = launchDescriptor(op);
    if (!descriptor)
      return descriptor.takeError();
    llvm::GlobalVariable *text = builder.CreateGlobalString(
        *descriptor, "kernel." + std::to_string(globals++), 0, &module);
    descriptors.push_back(text);
    auto store = [&](llvm::Value *array, ValueRange values) {
      for (auto [i, value] : llvm::enumerate(values))
        builder.CreateStore(pointers.lookup(value),
                            builder.CreateConstGEP1_64(ptr, array, i));
    };
    store(inputs, op.getInputs());
    store(outputs, op.getOutputs());
    returnIfFailed(builder.CreateCall(launch, {state, text, inputs, outputs}),
                   function);
    return llvm::Error::success();
  }

  /// A constant array `name` of `type` (hidden, for the runtime).
  void exportArray(llvm::Type *element, std::vector<llvm::Constant *> entries,
                   llvm::StringRef name) {
    auto *type = llvm::ArrayType::get(element, entries.size());
    auto *global = new llvm::GlobalVariable(
        module, type, /*isConstant=*/true, llvm::GlobalValue::ExternalLinkage,
        llvm::ConstantArray::get(type, entries), name);
    global->setVisibility(llvm::GlobalValue::HiddenVisibility);
  }

  /// trainc_model_constants, trainc_model_constant_sizes,
  /// trainc_model_num_constants and trainc_model_gpu_images (Model.h);
  /// empty on the CPU target.
  void emitDeviceTables() {
    std::vector<llvm::Constant *> data, sizes;
    for (auto [global, size] : constants) {
      data.push_back(global);
      sizes.push_back(builder.getInt64(size));
    }
    exportArray(ptr, data, "trainc_model_constants");
    exportArray(builder.getInt64Ty(), sizes, "trainc_model_constant_sizes");
    auto *count = new llvm::GlobalVariable(
        module, builder.getInt64Ty(), /*isConstant=*/true,
        llvm::GlobalValue::ExternalLinkage, builder.getInt64(constants.size()),
        "trainc_model_num_constants");
    count->setVisibility(llvm::GlobalValue::HiddenVisibility);
    auto *imageType =
        llvm::StructType::get(context, {ptr, ptr, builder.getInt64Ty()});
    std::vector<llvm::Constant *> images;
    for (const GpuImage &image : target.gpuImages) {
      llvm::GlobalVariable *arch = builder.CreateGlobalString(
          image.arch, "gpu_arch." + std::to_string(globals++), 0, &module);
      llvm::GlobalVariable *fatbin = bytesGlobal(
          image.fatbin, "gpu_fatbin." + std::to_string(globals++), false);
      images.push_back(llvm::ConstantStruct::get(
          imageType, {arch, fatbin, builder.getInt64(image.fatbin.size())}));
    }
    images.push_back(llvm::ConstantStruct::get(
        imageType, {llvm::ConstantPointerNull::get(ptr),
                    llvm::ConstantPointerNull::get(ptr), builder.getInt64(0)}));
    exportArray(imageType, images, "trainc_model_gpu_images");
  }

  /// trainc_model_kernels: every descriptor, null-terminated, so that the
  /// runtime prepares each launch when a session opens.
  void emitKernelTable() {
    std::vector<llvm::Constant *> entries = descriptors;
    entries.push_back(llvm::ConstantPointerNull::get(ptr));
    exportArray(ptr, entries, "trainc_model_kernels");
  }
};

} // namespace

/// Assembly that defines `symbol` (global, hidden, 64-byte aligned,
/// read-only) as the `size` bytes of the file at `path`.
static std::string incbinAsm(llvm::StringRef symbol, llvm::StringRef path,
                             size_t size) {
  std::string quoted;
  for (char c : path) {
    if (c == '"' || c == '\\')
      quoted += '\\';
    quoted += c;
  }
  std::string text;
  llvm::raw_string_ostream out(text);
  out << ".pushsection .rodata." << symbol << ",\"a\",@progbits\n"
      << ".balign 64\n"
      << ".globl " << symbol << "\n"
      << ".hidden " << symbol << "\n"
      << ".type " << symbol << ",@object\n"
      << symbol << ":\n"
      << ".incbin \"" << quoted << "\"\n"
      << ".size " << symbol << ", " << size << "\n"
      << ".popsection\n";
  return text;
}

llvm::Expected<std::unique_ptr<llvm::Module>>
emitModelModule(ModuleOp lowered, const WeightStore &weights,
                const std::string &manifestBase, StringRef inferenceModel,
                const Instrumentation &instrument, const EmitTarget &target,
                llvm::LLVMContext &context, std::string &manifestJson,
                const std::string &weightsFile) {
  if (instrument.checkNumerics && target.cuda)
    return llvm::createStringError(
        "--check-numerics is not built for --target cuda yet");
  auto module = std::make_unique<llvm::Module>("trainc_model", context);
  Emitter emitter(lowered, context, *module, instrument, target);
  nlohmann::json manifest = nlohmann::json::parse(manifestBase);
  nlohmann::json functions = nlohmann::json::object();
  nlohmann::json backends = nlohmann::json::object();
  std::set<std::string> persistentNames;
  // Persistent arguments that do not start at zero and have no weight (the
  // loss scale), from their graph.initial_value.
  WeightStore initialValues;

  for (auto function : lowered.getOps<func::FuncOp>()) {
    if (function->hasAttr(loop::kKernelAttrName))
      continue; // lowered on their own (LoopToLLVM.h)
    if (auto error = emitter.emitFunction(function))
      return std::move(error);
    nlohmann::json arguments = nlohmann::json::array();
    for (BlockArgument argument : function.getArguments()) {
      unsigned i = argument.getArgNumber();
      auto type = cast<MemRefType>(argument.getType());
      auto dtype = dtypeName(type.getElementType());
      if (!dtype)
        return dtype.takeError();
      auto name = function.getArgAttrOfType<StringAttr>(i, graph::kNameAttrName);
      auto role = function.getArgAttrOfType<StringAttr>(i, graph::kRoleAttrName);
      if (!name || !role)
        return llvm::createStringError("argument " + std::to_string(i) +
                                       " has no graph.name or graph.role");
      nlohmann::json entry = {{"name", name.str()},
                              {"role", role.str()},
                              {"dtype", *dtype},
                              {"shape", type.getShape().vec()}};
      if (auto layout =
              function.getArgAttrOfType<IntegerAttr>(i, kernel::kLayoutAttrName))
        entry["layout"] = layout.getInt();
      if (auto master =
              function.getArgAttrOfType<StringAttr>(i, graph::kCopyOfAttrName))
        entry["copy_of"] = master.str();
      if (auto starts = function.getArgAttrOfType<DenseI64ArrayAttr>(
              i, graph::kWindowStartsAttrName))
        entry["window_starts"] = starts.asArrayRef().vec();
      arguments.push_back(std::move(entry));
      persistentNames.insert(name.str());
      if (auto initial = function.getArgAttrOfType<DenseElementsAttr>(
              i, graph::kInitialValueAttrName);
          initial && !weights.count(name.str())) {
        WeightTensor &tensor = initialValues[name.str()];
        tensor.dtype = *dtype;
        tensor.shape = type.getShape().vec();
        ArrayRef<char> raw = initial.getRawData();
        size_t bytes = type.getNumElements() *
                       std::max<int64_t>(1, type.getElementTypeBitWidth() / 8);
        // A splat stores one element: repeat it.
        while (tensor.bytes.size() < bytes)
          tensor.bytes.insert(tensor.bytes.end(), raw.begin(), raw.end());
        tensor.bytes.resize(bytes);
      }
    }
    auto arena = function->getAttrOfType<IntegerAttr>(kernel::kArenaSizeAttrName);
    functions[function.getSymName().str()] = {
        {"arguments", arguments}, {"arena_size", arena ? arena.getInt() : 0}};
    function.walk([&](kernel::LaunchOp op) {
      auto &count = backends[op.getKernel().str()][op.getBackend().str()];
      count = count.is_null() ? 1 : count.get<int>() + 1;
    });
  }
  emitter.emitKernelTable();
  emitter.emitDeviceTables();
  manifest["functions"] = functions;
  manifest["backends"] = backends;
  if (instrument.profile)
    manifest["profile"] = emitter.profiled;
  if (instrument.checkNumerics)
    manifest["numerics"] = emitter.numerics;

  // The initial weights: one 64-byte-aligned blob.
  std::string blob;
  nlohmann::json weightList = nlohmann::json::array();
  for (const WeightStore *store :
       std::initializer_list<const WeightStore *>{&weights, &initialValues})
    for (const auto &[name, weight] : *store) {
      if (!persistentNames.count(name))
        continue;
      blob.resize((blob.size() + 63) / 64 * 64, '\0');
      weightList.push_back({{"name", name},
                            {"dtype", weight.dtype},
                            {"shape", weight.shape},
                            {"offset", blob.size()},
                            {"bytes", weight.bytes.size()}});
      blob.append(weight.bytes.begin(), weight.bytes.end());
    }
  manifest["weights"] = weightList;
  if (weightsFile.empty()) {
    emitter.bytesGlobal(blob, "trainc_model_weights", /*exported=*/true);
  } else {
    std::ofstream stream(weightsFile, std::ios::binary);
    stream.write(blob.data(), static_cast<std::streamsize>(blob.size()));
    if (!stream.flush())
      return llvm::createStringError("cannot write '" + weightsFile + "'");
    module->appendModuleInlineAsm(
        incbinAsm("trainc_model_weights", weightsFile, blob.size()));
  }
  emitter.bytesGlobal(inferenceModel, "trainc_model_onnx", /*exported=*/true);
  auto *size = new llvm::GlobalVariable(
      *module, emitter.builder.getInt64Ty(), /*isConstant=*/true,
      llvm::GlobalValue::ExternalLinkage,
      emitter.builder.getInt64(inferenceModel.size()),
      "trainc_model_onnx_size");
  size->setVisibility(llvm::GlobalValue::HiddenVisibility);
  manifestJson = manifest.dump(2);
  std::string withNull = manifestJson;
  withNull.push_back('\0');
  emitter.bytesGlobal(withNull, "trainc_model_manifest", /*exported=*/true);
  return module;
}

} // namespace trainc::codegen
