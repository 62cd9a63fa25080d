"""Training-step throughput: ``Executor.run`` against the same arithmetic written as plain numpy.

Two models, batch 64 of random data fed through ``exe.run(feed=...)`` one step at a time, SGD:
  * mlp:  784 -> fc 256 relu -> fc 10 -> softmax_with_cross_entropy -> mean
  * conv: [1, 28, 28] -> conv2d 8x5x5 relu -> max pool 2 -> fc 10 -> softmax_with_cross_entropy -> mean
The numpy reference is one function per model doing forward, backward and the SGD update (the floor
for a Python runtime). For the mlp, a third contender is the same network in dygraph mode
(``fluid.dygraph.Linear`` x2, ``loss.backward()``, ``SGD.minimize``, ``clear_gradients``): eager ops
through the tracer and the registered gradients. All start from the same parameters; their first
losses are compared as a sanity check. They run alternately, step by step, after a warm-up. Prints
ONE JSON line with samples/s, the median step times, ratio = executor / numpy and, for the mlp,
eager_static_ratio = eager / executor.

Two more lines of the same JSON, ``lenet`` (MNIST shapes) and ``resnet20`` (a CIFAR batch of 128), train
conv nets side by side with PyTorch when ``torch`` is importable (tools/conv_nets.py): median step times,
``speed_vs_torch`` = torch's step time / minifluid's (1.0: as fast), and for ResNet-20 each one's peak
memory growth during one step. torch is never a dependency: run this script from an environment that has
both, e.g. ``python3 -m venv /tmp/tv && /tmp/tv/bin/pip install torch numpy networkx six &&
/tmp/tv/bin/pip install --no-deps -e .``.

A ``conv2d_transpose`` entry times conv2d_transpose's forward and backward kernels against conv2d's on the
same shapes (tools/conv_nets.py ``transpose_vs_conv``: the conv whose adjoint it is, DCGAN generator layers
at batch 64); ``ratio`` = transpose / conv.

``--profile resnet20`` (or ``lenet``) prints instead where one step's time goes, op by op, in both frameworks
(tools/conv_nets.py ``profile``): the evidence for what bounds the ratio.

Run: python tools/bench_train.py [--steps 300] [--warmup 30] [--net-steps 20] [--nets-only] [--transpose-only]
                                 [--profile NET]
"""
import argparse
import json
import platform
import statistics
import time

import numpy as np

import minifluid as fluid
from conv_nets import NETS, compare, profile, transpose_vs_conv

BATCH = 64
LR = 0.05


# --- the two networks through minifluid ---------------------------------------------------------
def build_mlp():
    x = fluid.data("x", [None, 784])
    label = fluid.data("label", [None, 1], "int64")
    h = fluid.layers.fc(x, 256, act="relu")
    logits = fluid.layers.fc(h, 10)
    return fluid.layers.mean(fluid.layers.softmax_with_cross_entropy(logits, label))


def build_conv():
    x = fluid.data("x", [None, 1, 28, 28])
    label = fluid.data("label", [None, 1], "int64")
    h = fluid.layers.conv2d(x, num_filters=8, filter_size=5, act="relu")
    h = fluid.layers.pool2d(h, pool_size=2, pool_type="max", pool_stride=2)
    logits = fluid.layers.fc(h, 10)
    return fluid.layers.mean(fluid.layers.softmax_with_cross_entropy(logits, label))


# --- the same arithmetic in plain numpy -------------------------------------------------------------
def _xent_grad(logits, y):
    """Mean softmax cross entropy and its gradient with respect to the logits."""
    n = len(y)
    shifted = logits - logits.max(axis=1, keepdims=True)
    exp = np.exp(shifted)
    total = exp.sum(axis=1, keepdims=True)
    rows = np.arange(n)
    loss = float((np.log(total[:, 0]) - shifted[rows, y]).mean())
    d = exp / total
    d[rows, y] -= 1.0
    d /= n
    return loss, d


def numpy_mlp_step(p, x, y):
    h = x @ p["fc_0.w_0"]
    h += p["fc_0.b_0"]
    np.maximum(h, 0, out=h)
    logits = h @ p["fc_1.w_0"]
    logits += p["fc_1.b_0"]
    loss, d = _xent_grad(logits, y)
    dw2, db2 = h.T @ d, d.sum(axis=0)
    dh = d @ p["fc_1.w_0"].T
    dh *= h > 0
    dw1, db1 = x.T @ dh, dh.sum(axis=0)
    for name, g in (("fc_0.w_0", dw1), ("fc_0.b_0", db1), ("fc_1.w_0", dw2), ("fc_1.b_0", db2)):
        p[name] -= LR * g
    return loss


def numpy_conv_step(p, x, y):
    """The conv net in NHWC internally (im2col rows are output pixels), NCHW where the fc needs it."""
    w, b, wf = p["conv2d_0.w_0"], p["conv2d_0.b_0"], p["fc_0.w_0"]
    n, (f, c, kh, kw) = len(x), w.shape
    oh, ow = x.shape[2] - kh + 1, x.shape[3] - kw + 1
    s = x.strides
    win = np.lib.stride_tricks.as_strided(x, (n, oh, ow, c, kh, kw), (s[0], s[2], s[3], s[1], s[2], s[3]))
    cols = win.reshape(n * oh * ow, c * kh * kw)
    act = cols @ w.reshape(f, -1).T
    act += b
    np.maximum(act, 0, out=act)
    blocks = act.reshape(n, oh // 2, 2, ow // 2, 2, f)
    pooled = blocks.max(axis=(2, 4))
    flat = pooled.transpose(0, 3, 1, 2).reshape(n, -1)
    logits = flat @ wf
    logits += p["fc_0.b_0"]
    loss, d = _xent_grad(logits, y)
    dwf, dbf = flat.T @ d, d.sum(axis=0)
    dpool = (d @ wf.T).reshape(n, f, oh // 2, ow // 2).transpose(0, 2, 3, 1)[:, :, None, :, None, :]
    dact = ((blocks == pooled[:, :, None, :, None, :]) * dpool).reshape(n * oh * ow, f)
    dact *= act > 0
    db = dact.sum(axis=0)
    dw = (dact.T @ cols).reshape(w.shape)
    for name, g in (("conv2d_0.w_0", dw), ("conv2d_0.b_0", db), ("fc_0.w_0", dwf), ("fc_0.b_0", dbf)):
        p[name] -= LR * g
    return loss


# --- the mlp in dygraph mode ---------------------------------------------------------------------------
def eager_mlp_step(params):
    """A step function training the mlp eagerly, from a copy of ``params`` (static names)."""
    fc1 = fluid.dygraph.Linear(784, 256, act="relu")
    fc2 = fluid.dygraph.Linear(256, 10)
    for p, name in zip((fc1.weight, fc1.bias, fc2.weight, fc2.bias), ("fc_0.w_0", "fc_0.b_0", "fc_1.w_0", "fc_1.b_0")):
        p.set_value(params[name])
    opt = fluid.optimizer.SGD(learning_rate=LR, parameter_list=fc1.parameters() + fc2.parameters())
    to_variable = fluid.dygraph.to_variable

    def step(x, y):
        logits = fc2(fc1(to_variable(x)))
        loss = fluid.layers.mean(fluid.layers.softmax_with_cross_entropy(logits, to_variable(y.reshape(-1, 1))))
        loss.backward()
        opt.minimize(loss)
        fc1.clear_gradients()
        fc2.clear_gradients()
        return float(loss.numpy()[0])
    return step


# --- timing ----------------------------------------------------------------------------------------
def _median_ms(fns, batches, warmup, steps):
    """Median step time of each function; the functions alternate step by step, so machine noise
    (other processes, BLAS threads, frequency changes) hits all of them alike."""
    for i in range(warmup):
        for fn in fns:
            fn(*batches[i % len(batches)])
    times = [[] for _ in fns]
    for i in range(steps):
        args = batches[i % len(batches)]
        for fn, bucket in zip(fns, times):
            t0 = time.perf_counter()
            fn(*args)
            bucket.append(time.perf_counter() - t0)
    return [statistics.median(t) * 1e3 for t in times]


def bench(build, numpy_step, x_shape, warmup, steps, eager_step=None):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        loss = build()
        fluid.optimizer.SGD(learning_rate=LR).minimize(loss)
    rng = np.random.RandomState(0)
    batches = [(rng.rand(BATCH, *x_shape).astype("float32"), rng.randint(0, 10, BATCH).astype("int64"))
               for _ in range(8)]
    scope = fluid.Scope()
    exe = fluid.Executor(fluid.CPUPlace())
    with fluid.scope_guard(scope):
        exe.run(startup)
        params = {p.name: scope.find_value(p.name).copy() for p in main.all_parameters()}
        x0, y0 = batches[0]
        ref_losses = [numpy_step(dict((k, v.copy()) for k, v in params.items()), x0, y0)]
        fetched = exe.run(main, feed={"x": x0, "label": y0.reshape(-1, 1)}, fetch_list=[loss])
        loss_diff = abs(float(fetched[0].reshape(-1)[0]) - ref_losses[0])

        def executor_step(x, y):
            exe.run(main, feed={"x": x, "label": y.reshape(-1, 1)}, fetch_list=[loss])
        fns = [executor_step, lambda x, y: numpy_step(params, x, y)]
        with fluid.dygraph.guard():  # Executor.run ignores the mode; the eager step needs it
            if eager_step is not None:
                eager = eager_step(params)
                eager_loss_diff = abs(eager(x0, y0) - ref_losses[0])
                eager = eager_step(params)  # fresh parameters for the timed run
                fns.append(eager)
            times = _median_ms(fns, batches, warmup, steps)
    exe_ms, np_ms = times[:2]
    result = {"executor_samples_per_s": round(BATCH * 1e3 / exe_ms, 1),
              "numpy_samples_per_s": round(BATCH * 1e3 / np_ms, 1),
              "executor_step_ms": round(exe_ms, 4), "numpy_step_ms": round(np_ms, 4),
              "ratio": round(exe_ms / np_ms, 3), "first_loss_abs_diff": float(f"{loss_diff:.3g}")}
    if eager_step is not None:
        eager_ms = times[2]
        result.update(eager_samples_per_s=round(BATCH * 1e3 / eager_ms, 1), eager_step_ms=round(eager_ms, 4),
                      eager_static_ratio=round(eager_ms / exe_ms, 3), eager_numpy_ratio=round(eager_ms / np_ms, 3),
                      eager_first_loss_abs_diff=float(f"{eager_loss_diff:.3g}"))
    return result


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--warmup", type=int, default=30)
    ap.add_argument("--net-steps", type=int, default=20, help="timed steps of the LeNet / ResNet-20 lines")
    ap.add_argument("--nets-only", action="store_true", help="only the LeNet / ResNet-20 lines")
    ap.add_argument("--transpose-only", action="store_true", help="only the conv2d_transpose vs conv2d line")
    ap.add_argument("--profile", choices=sorted(NETS), help="only a per-op profile of one net's step, both frameworks")
    args = ap.parse_args()
    if args.profile:
        print(json.dumps({f"{args.profile}_profile": profile(args.profile, 128, max(args.net_steps // 4, 1))}))
        return
    if args.transpose_only:
        print(json.dumps({"conv2d_transpose": transpose_vs_conv(args.net_steps)}))
        return
    result = {"batch": BATCH, "steps": args.steps}
    if not args.nets_only:
        result.update(mlp=bench(build_mlp, numpy_mlp_step, (784,), args.warmup, args.steps, eager_mlp_step),
                      conv=bench(build_conv, numpy_conv_step, (1, 28, 28), args.warmup, args.steps))
    result.update(lenet=compare("lenet", 128, 3, args.net_steps),
                  resnet20=compare("resnet20", 128, 1, max(args.net_steps // 4, 1)),
                  conv2d_transpose=transpose_vs_conv(args.net_steps),
                  python=platform.python_version(), numpy=np.__version__)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
