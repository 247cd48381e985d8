"""ONNX Runtime Training peer of bench/run.py (onnxruntime-training-cpu, its
on-device training API): the same ONNX file, its training artifacts
generated once per model (training, eval and optimizer graphs, checkpoint),
trained on the fixed batch with softmax cross-entropy.

The optimizer is ORT's SGD, which has no momentum (artifacts.OptimType
offers AdamW and plain SGD): one multiply-add per parameter less than the
others' SGD with momentum. BatchNorm's running statistics are not written
back (ORT keeps them out of the trainable state). The
transformer's Dropout and LayerNormalization nodes get the optional outputs
ORT's gradients need (make_artifacts).

Usage: peer_ort.py [bench/measure.py's options] (--momentum is not used);
the artifacts go to DATA/ort (made when missing)."""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import measure  # noqa: E402


def make_artifacts(onnx_path, directory):
    import onnx
    from onnxruntime.training import artifacts

    model = onnx.load(onnx_path)
    # ORT's gradients of Dropout and LayerNormalization read optional
    # outputs the export leaves out (the mask; the mean and inverse standard
    # deviation): name them.
    optional_outputs = {"Dropout": 2, "LayerNormalization": 3}
    for node in model.graph.node:
        wanted = optional_outputs.get(node.op_type, 0)
        for i in range(len(node.output), wanted):
            node.output.append(f"{node.output[0]}.optional{i}")
    running = ("running_mean", "running_var", "num_batches_tracked")
    float_types = (onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE)
    trainable = [t.name for t in model.graph.initializer
                 if t.data_type in float_types and not t.name.endswith(running)]
    frozen = [t.name for t in model.graph.initializer if t.name not in trainable]
    artifacts.generate_artifacts(
        model, requires_grad=trainable, frozen_params=frozen,
        loss=artifacts.LossType.CrossEntropyLoss,
        optimizer=artifacts.OptimType.SGD, artifact_directory=directory)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    measure.add_arguments(parser)
    args = parser.parse_args()

    import numpy as np
    import onnxruntime
    from onnxruntime.training.api import CheckpointState, Module, Optimizer

    directory = os.path.join(args.data, "ort")
    os.makedirs(directory, exist_ok=True)
    if not os.path.exists(os.path.join(directory, "optimizer_model.onnx")):
        make_artifacts(args.onnx, directory)
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = args.threads
    options.inter_op_num_threads = 1
    state = CheckpointState.load_checkpoint(os.path.join(directory, "checkpoint"))
    # No eval model: ORT rewrites BatchNorm into an inference form it then
    # rejects (3 outputs), and only training is measured.
    module = Module(os.path.join(directory, "training_model.onnx"), state, None,
                    device="cpu", session_options=options)
    optimizer = Optimizer(os.path.join(directory, "optimizer_model.onnx"), module)
    optimizer.set_learning_rate(args.lr)
    module.train()
    inputs = [np.load(os.path.join(args.data, f"{n}.npy")) for n in args.inputs.split(",")]
    labels = np.load(os.path.join(args.data, "labels.npy"))

    def step():
        loss = module(*inputs, labels)
        optimizer.step()
        module.lazy_reset_grad()
        return float(loss)

    measure.run(step, args, framework="ort-training", how="on-device training API, SGD without momentum",
                version=onnxruntime.__version__)


if __name__ == "__main__":
    main()
