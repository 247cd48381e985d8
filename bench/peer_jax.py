"""JAX/XLA (CPU) peer of bench/run.py: the reference models of
models/export.py written again in jax.numpy (JAX cannot run torch modules),
with the ONNX file's weights by name, trained on the fixed batch with
softmax cross-entropy and SGD + momentum (PyTorch's form: v = m v + g,
p -= lr v; BatchNorm on batch statistics with PyTorch's running-statistics
update). The whole step is one jax.jit with donated buffers.

Threads: XLA's CPU client sizes its pool to the cores; with --threads 1
the harness sets XLA_FLAGS to keep Eigen single-threaded before jax is
imported (see thread_flags()).

Usage: peer_jax.py [bench/measure.py's options]; --data DIR holds
weights.npz (the ONNX initializers), INPUT.npy and labels.npy."""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import measure  # noqa: E402


def thread_flags(threads):
    """XLA_FLAGS for a thread count (None: XLA's default, every core)."""
    if threads == 1:
        return ("--xla_cpu_multi_thread_eigen=false "
                "intra_op_parallelism_threads=1")
    return None


def models():
    """Forward functions by model name: f(params, state, inputs) ->
    (logits, new_state). Imported lazily: jax is imported after XLA_FLAGS."""
    import jax
    import jax.numpy as jnp
    from jax import lax

    def linear(p, name, x):
        return x @ p[f"{name}.weight"].T + p[f"{name}.bias"]

    def conv(p, name, x, stride=1, padding=0):
        y = lax.conv_general_dilated(
            x, p[f"{name}.weight"], (stride, stride),
            [(padding, padding), (padding, padding)],
            dimension_numbers=("NCHW", "OIHW", "NCHW"))
        bias = p.get(f"{name}.bias")
        return y if bias is None else y + bias[None, :, None, None]

    def max_pool(x, k, s, padding=0):
        return lax.reduce_window(x, -jnp.inf, lax.max, (1, 1, k, k), (1, 1, s, s),
                                 [(0, 0), (0, 0), (padding, padding), (padding, padding)])

    def batch_norm(p, state, name, x, new_state, momentum=0.1, eps=1e-5):
        mean = x.mean(axis=(0, 2, 3))
        var = x.var(axis=(0, 2, 3))
        n = x.size // x.shape[1]
        new_state[f"{name}.running_mean"] = (
            (1 - momentum) * state[f"{name}.running_mean"] + momentum * mean)
        new_state[f"{name}.running_var"] = (
            (1 - momentum) * state[f"{name}.running_var"] + momentum * var * n / (n - 1))
        shape = (1, -1, 1, 1)
        y = (x - mean.reshape(shape)) * lax.rsqrt(var.reshape(shape) + eps)
        return y * p[f"{name}.weight"].reshape(shape) + p[f"{name}.bias"].reshape(shape)

    def layer_norm(p, name, x, eps=1e-5):
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) * lax.rsqrt(var + eps) * p[f"{name}.weight"] + p[f"{name}.bias"]

    def mlp(p, state, image):
        x = image.reshape(image.shape[0], -1)
        x = jax.nn.relu(linear(p, "fc1", x))
        x = jax.nn.relu(linear(p, "fc2", x))
        return linear(p, "fc3", x), state

    def cnn(p, state, image):
        x = max_pool(jax.nn.relu(conv(p, "conv1", image, padding=1)), 2, 2)
        x = max_pool(jax.nn.relu(conv(p, "conv2", x, padding=1)), 2, 2)
        x = jax.nn.relu(linear(p, "fc1", x.reshape(x.shape[0], -1)))
        return linear(p, "fc2", x), state

    def resnet18(p, state, image):
        new_state = {}
        x = conv(p, "conv1", image, stride=2, padding=3)
        x = jax.nn.relu(batch_norm(p, state, "bn1", x, new_state))
        x = max_pool(x, 3, 2, padding=1)
        for layer in range(1, 5):
            for block in range(2):
                name = f"layer{layer}.{block}"
                stride = 2 if layer > 1 and block == 0 else 1
                y = conv(p, f"{name}.conv1", x, stride=stride, padding=1)
                y = jax.nn.relu(batch_norm(p, state, f"{name}.bn1", y, new_state))
                y = conv(p, f"{name}.conv2", y, padding=1)
                y = batch_norm(p, state, f"{name}.bn2", y, new_state)
                if f"{name}.downsample.0.weight" in p:
                    x = conv(p, f"{name}.downsample.0", x, stride=stride)
                    x = batch_norm(p, state, f"{name}.downsample.1", x, new_state)
                x = jax.nn.relu(x + y)
        return linear(p, "fc", x.mean(axis=(2, 3))), new_state

    def transformer(p, state, tokens, heads=4):
        x = p["embed.weight"][tokens] + p["pos"]
        batch, seq, d = x.shape
        for layer in range(2):
            name = f"layers.{layer}"
            qkv = x @ p[f"{name}.self_attn.in_proj_weight"].T + p[f"{name}.self_attn.in_proj_bias"]
            q, k, v = (t.reshape(batch, seq, heads, d // heads).transpose(0, 2, 1, 3)
                       for t in jnp.split(qkv, 3, axis=-1))
            scores = q @ k.transpose(0, 1, 3, 2) / jnp.sqrt(d // heads).astype(x.dtype)
            attention = (jax.nn.softmax(scores, -1) @ v).transpose(0, 2, 1, 3)
            attention = linear(p, f"{name}.self_attn.out_proj",
                               attention.reshape(batch, seq, d))
            x = layer_norm(p, f"{name}.norm1", x + attention)
            feed = linear(p, f"{name}.linear2",
                          jax.nn.gelu(linear(p, f"{name}.linear1", x), approximate=False))
            x = layer_norm(p, f"{name}.norm2", x + feed)
        return linear(p, "head", x.mean(axis=1)), state

    return {"mlp": mlp, "cnn": cnn, "resnet18": resnet18, "transformer": transformer}


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    measure.add_arguments(parser)
    args = parser.parse_args()
    flags = thread_flags(args.threads)
    if flags:
        os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " " + flags).strip()

    import jax
    import jax.numpy as jnp
    import numpy as np

    forward = models().get(args.model)
    if forward is None:
        raise SystemExit(f"peer_jax.py has no {args.model}")
    weights = np.load(os.path.join(args.data, "weights.npz"))
    state_names = {k for k in weights.files
                   if k.endswith(("running_mean", "running_var", "num_batches_tracked"))}
    params = {k: jnp.asarray(weights[k]) for k in weights.files if k not in state_names}
    state = {k: jnp.asarray(weights[k]) for k in state_names
             if not k.endswith("num_batches_tracked")}
    velocity = {k: jnp.zeros_like(v) for k, v in params.items()}
    inputs = [jnp.asarray(np.load(os.path.join(args.data, f"{n}.npy")))
              for n in args.inputs.split(",")]
    labels = jnp.asarray(np.load(os.path.join(args.data, "labels.npy")))

    def loss_of(params, state, inputs, labels):
        logits, new_state = forward(params, state, *inputs)
        log_probs = jax.nn.log_softmax(logits, axis=-1)
        loss = -jnp.take_along_axis(log_probs, labels[:, None], axis=-1).mean()
        return loss, new_state

    def train_step(params, velocity, state, inputs, labels):
        (loss, new_state), grads = jax.value_and_grad(loss_of, has_aux=True)(
            params, state, inputs, labels)
        velocity = jax.tree_util.tree_map(lambda v, g: args.momentum * v + g,
                                          velocity, grads)
        params = jax.tree_util.tree_map(lambda p, v: p - args.lr * v, params, velocity)
        return loss, params, velocity, new_state

    jitted = jax.jit(train_step, donate_argnums=(0, 1, 2))
    current = [params, velocity, state]

    def step():
        loss, current[0], current[1], current[2] = jitted(*current, inputs, labels)
        return float(loss)

    measure.run(step, args, framework="jax", how="jax.jit(value_and_grad)",
                version=jax.__version__)


if __name__ == "__main__":
    main()
