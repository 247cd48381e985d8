//===- GraphBase.td - the graph dialect and its op base classes -----------===//
//
// The graph dialect is trainc's highest level: value-semantic tensor ops with
// static shapes, one op per ONNX operator family, each owning its shape and
// type inference (InferTypeOpInterface). Every op normalizes its attributes
// (axes are non-negative, pads are explicit), so passes never re-derive ONNX
// defaults.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_GRAPH_BASE_TD
#define TRAINC_GRAPH_BASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "dialects/graph/GradientInterface.td"
include "dialects/graph/CastClass.td"
include "dialects/graph/CostInterface.td"

def Graph_Dialect : Dialect {
  let name = "graph";
  let cppNamespace = "::trainc::graph";
  let summary = "Value-semantic tensor graph imported from ONNX";
  let description = [{
    The graph dialect holds a model as imported from ONNX: ops on ranked
    tensors with value semantics. Shapes are static; a reshape keeps ONNX's
    batch-relative `0` and `-1` entries so that the batch dimension can later
    become symbolic. Model weights are not IR constants: every initializer is
    an argument of `@forward` carrying a `graph.role` argument attribute
    (`parameter`, `state` or `constant`) and its ONNX name in `graph.name`.
  }];
  let useDefaultAttributePrinterParser = 0;
  let hasConstantMaterializer = 1;
}

//===----------------------------------------------------------------------===//
// Type constraints
//===----------------------------------------------------------------------===//

def Graph_Tensor : RankedTensorOf<[AnyFloat, AnySignlessInteger]>;
def Graph_FloatTensor : RankedTensorOf<[AnyFloat]>;
def Graph_BoolTensor : RankedTensorOf<[I1]>;
def Graph_IndexTensor : RankedTensorOf<[I32, I64]>;

//===----------------------------------------------------------------------===//
// Base classes
//===----------------------------------------------------------------------===//

// Every graph op infers its result types from operands and attributes; the
// inference doubles as the verifier (a mismatch is a verification error).
// Every graph op has a cost (CostInterface.td): the interface's defaults,
// or its own flops where it lists Graph_CustomCost.
class Graph_Op<string mnemonic, list<Trait> traits = []>
    : Op<Graph_Dialect, mnemonic,
         !listconcat(traits, [InferTypeOpAdaptor],
                     !if(!foldl(0, traits, found, trait,
                                !or(found, !eq(trait, Graph_CustomCost))),
                         []<Trait>, [Graph_CostOpInterface]))>;

// op %x : type  -- result has the operand's type.
class Graph_UnaryOpBase<string mnemonic, Type type, list<Trait> traits = []>
    : Graph_Op<mnemonic, traits> {
  let arguments = (ins type:$input);
  let results = (outs type:$output);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}
class Graph_UnaryOp<string mnemonic, Type type, list<Trait> traits = []>
    : Graph_UnaryOpBase<mnemonic, type, !listconcat(traits, [Pure])>;

// Binary op with ONNX (numpy) multidirectional broadcasting.
class Graph_BroadcastOp<string mnemonic, Type operandType, Type resultType,
                        list<Trait> traits = []>
    : Graph_Op<mnemonic, !listconcat(traits, [Pure])> {
  let arguments = (ins operandType:$lhs, operandType:$rhs);
  let results = (outs resultType:$output);
  let assemblyFormat =
      "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
}

// Generic form for everything else: operands, attributes, full signature.
class Graph_FunctionalOp<string mnemonic, list<Trait> traits = []>
    : Graph_Op<mnemonic, traits> {
  let assemblyFormat =
      "operands attr-dict `:` functional-type(operands, results)";
}

#endif // TRAINC_GRAPH_BASE_TD
