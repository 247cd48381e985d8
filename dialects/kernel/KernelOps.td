//===- KernelOps.td - the operator dialect ------------------------------===//
//
// One op per concrete kernel call on buffers (RAF's operator dialects in
// MLIR). A `kernel.launch` names the graph op it computes, carries that
// op's attributes and the backend that implements it (chosen by
// --trainc-dispatch); its operands are memrefs: inputs, then the outputs it
// writes (destination-passing style). Intermediate buffers come from
// `kernel.alloc` and get an offset in one static arena from
// --trainc-plan-memory.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_KERNEL_OPS_TD
#define TRAINC_KERNEL_OPS_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Kernel_Dialect : Dialect {
  let name = "kernel";
  let cppNamespace = "::trainc::kernel";
  let summary = "Kernel calls on buffers, each with its backend";
  let description = [{
    The level between the graph dialect and code: every op is one call of a
    concrete kernel on memrefs with static shapes and identity layout. The
    dispatch registry (BackendRegistry.cpp) decides which backend (`reference`,
    `openblas`, `dnnl`, `generated`) runs each launch.
  }];
}

class Kernel_Op<string mnemonic, list<Trait> traits = []>
    : Op<Kernel_Dialect, mnemonic, traits>;

def Kernel_AllocOp : Kernel_Op<"alloc"> {
  let summary = "An intermediate buffer, placed in the arena";
  let description = [{
    A buffer that lives from this op to its last use. --trainc-plan-memory
    sets `offset`: the byte offset of the buffer in the step's arena.
  }];
  let arguments = (ins OptionalAttr<I64Attr>:$offset);
  let results = (outs AnyStaticShapeMemRef:$buffer);
  let assemblyFormat = "attr-dict `:` type($buffer)";
}

def Kernel_ConstantOp : Kernel_Op<"constant", [Pure]> {
  let summary = "A read-only buffer holding a constant (graph.constant)";
  let arguments = (ins ElementsAttr:$value);
  let results = (outs AnyStaticShapeMemRef:$buffer);
  let assemblyFormat = "attr-dict $value `:` type($buffer)";
  let hasVerifier = 1;
}

def Kernel_ViewOp : Kernel_Op<"view", [Pure]> {
  let summary = "The same buffer under another shape (a reshape, no copy)";
  let description = [{
    `graph.reshape` and `graph.identity` only rename elements of a dense
    row-major buffer, so they lower to a view of their operand's buffer
    instead of a copy. The buffer a view comes from stays live as long as
    the view is used (--trainc-plan-memory), and an optimizer update writes
    a state in place only after the last read through any view of it.
  }];
  let arguments = (ins AnyStaticShapeMemRef:$source);
  let results = (outs AnyStaticShapeMemRef:$result);
  let assemblyFormat = "$source attr-dict `:` type($source) `to` type($result)";
  let hasVerifier = 1;
}

def Kernel_LaunchOp : Kernel_Op<"launch", [AttrSizedOperandSegments]> {
  let summary = "One kernel call: reads `inputs`, writes `outputs`";
  let description = [{
    `kernel` is the graph op this call computes (e.g. "graph.conv") or a
    runtime utility ("runtime.copy"); `options` are that op's attributes;
    `backend` is empty until --trainc-dispatch chooses one.

    A launch of the `generated` backend names the `loop.kernel` function
    that computes it (`callee`, set by --trainc-kernel-to-loop), which takes
    the inputs, the outputs and then the `scratch` buffers: intermediates
    the kernel needs besides its outputs (e.g. softmax's row maxima), placed
    in the arena like any other buffer (a scratch operand may be a
    `kernel.view` of another, for a kernel that indexes it in two shapes).
  }];
  let arguments = (ins Variadic<AnyStaticShapeMemRef>:$inputs,
                       Variadic<AnyStaticShapeMemRef>:$outputs,
                       Variadic<AnyStaticShapeMemRef>:$scratch,
                       StrAttr:$kernel, DictionaryAttr:$options,
                       DefaultValuedAttr<StrAttr, "\"\"">:$backend,
                       OptionalAttr<FlatSymbolRefAttr>:$callee);
  let assemblyFormat = [{
    $kernel `(` $inputs `)` `->` `(` $outputs `)`
    (`scratch` `(` $scratch^ `:` type($scratch) `)`)? attr-dict
    `:` functional-type($inputs, $outputs)
  }];
  let builders = [
    OpBuilder<(ins "mlir::ValueRange":$inputs, "mlir::ValueRange":$outputs,
                   "llvm::StringRef":$kernel,
                   "mlir::DictionaryAttr":$options), [{
      build($_builder, $_state, inputs, outputs, mlir::ValueRange{}, kernel,
            options, "", nullptr);
    }]>,
  ];
  let hasVerifier = 1;
}

#endif // TRAINC_KERNEL_OPS_TD
