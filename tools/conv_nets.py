"""LeNet (MNIST shapes) and ResNet-20 (CIFAR shapes) in minifluid and, when it is importable, PyTorch,
timed side by side for tools/bench_train.py.

Both frameworks train the same architecture with plain SGD on the same random batch, on the same number
of threads (minifluid: its intra-op threads, minifluid/ops/parallel.py, with OpenBLAS on one thread; torch:
``torch.set_num_threads``); their steps alternate (minifluid, torch, minifluid, ...) so machine noise hits
both alike. Nothing may spin between the steps: OpenBLAS workers left spinning after a minifluid step once
made PyTorch's LeNet step 2x slower (README, conv nets).
  * lenet:    [1, 28, 28] -> conv 5x5x20 relu -> max pool 2 -> conv 5x5x50 relu -> max pool 2 -> fc 10
  * resnet20: [3, 32, 32] -> conv 3x3x16 BN relu -> 3 stages x 3 basic blocks (16/32/64 channels, two
              3x3 conv + BN each, 1x1 conv + BN projection where the shape changes) -> global avg pool
              -> fc 10
Each ends in softmax cross entropy and a mean. Peak memory of one step is the growth of the process's
resident set high-water mark over the first step in a fresh process (VmHWM, reset through
/proc/self/clear_refs once the model is built and initialised).
"""
import os
import statistics
import subprocess
import sys
import time

import numpy as np

import minifluid as fluid

LR = 0.01


def lenet_minifluid():
    x = fluid.data("x", [None, 1, 28, 28])
    label = fluid.data("label", [None, 1], "int64")
    h = fluid.layers.conv2d(x, 20, 5, act="relu")
    h = fluid.layers.pool2d(h, 2, "max", 2)
    h = fluid.layers.conv2d(h, 50, 5, act="relu")
    h = fluid.layers.pool2d(h, 2, "max", 2)
    return fluid.layers.mean(fluid.layers.softmax_with_cross_entropy(fluid.layers.fc(h, 10), label))


def _conv_bn(x, channels, k, stride, act):
    h = fluid.layers.conv2d(x, channels, k, stride=stride, padding=(k - 1) // 2, bias_attr=False)
    return fluid.layers.batch_norm(h, act=act)


def resnet20_minifluid():
    x = fluid.data("x", [None, 3, 32, 32])
    label = fluid.data("label", [None, 1], "int64")
    h, cin = _conv_bn(x, 16, 3, 1, "relu"), 16
    for channels, stride in ((16, 1), (32, 2), (64, 2)):
        for i in range(3):
            s = stride if i == 0 else 1
            y = _conv_bn(_conv_bn(h, channels, 3, s, "relu"), channels, 3, 1, None)
            short = _conv_bn(h, channels, 1, s, None) if (s != 1 or cin != channels) else h
            h, cin = fluid.layers.relu(fluid.layers.elementwise_add(y, short)), channels
    h = fluid.layers.pool2d(h, pool_type="avg", global_pooling=True)
    return fluid.layers.mean(fluid.layers.softmax_with_cross_entropy(fluid.layers.fc(h, 10), label))


def _torch_models(torch):
    nn = torch.nn

    class Block(nn.Module):
        def __init__(self, cin, c, s):
            super().__init__()
            self.body = nn.Sequential(nn.Conv2d(cin, c, 3, s, 1, bias=False), nn.BatchNorm2d(c), nn.ReLU(),
                                      nn.Conv2d(c, c, 3, 1, 1, bias=False), nn.BatchNorm2d(c))
            self.short = (nn.Sequential(nn.Conv2d(cin, c, 1, s, bias=False), nn.BatchNorm2d(c))
                          if s != 1 or cin != c else nn.Identity())

        def forward(self, x):
            return torch.relu(self.body(x) + self.short(x))

    def lenet():
        return nn.Sequential(nn.Conv2d(1, 20, 5), nn.ReLU(), nn.MaxPool2d(2, 2), nn.Conv2d(20, 50, 5), nn.ReLU(),
                             nn.MaxPool2d(2, 2), nn.Flatten(), nn.Linear(800, 10))

    def resnet20():
        layers, cin = [nn.Conv2d(3, 16, 3, 1, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU()], 16
        for c, s in ((16, 1), (32, 2), (64, 2)):
            for i in range(3):
                layers.append(Block(cin, c, s if i == 0 else 1))
                cin = c
        return nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10))
    return {"lenet": lenet, "resnet20": resnet20}


NETS = {"lenet": (lenet_minifluid, (1, 28, 28)), "resnet20": (resnet20_minifluid, (3, 32, 32))}


def minifluid_step(name, batch, seed=1):
    """One SGD step of net ``name`` on a fixed batch per call; the weights start from ``seed`` (the
    program's generator), so the steps do not depend on numpy's global random state."""
    build, shape = NETS[name]
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = seed
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        loss = build()
        fluid.optimizer.SGD(learning_rate=LR).minimize(loss)
    rng = np.random.RandomState(0)
    feed = {"x": rng.rand(batch, *shape).astype("float32"),
            "label": rng.randint(0, 10, (batch, 1)).astype("int64")}
    scope, exe = fluid.Scope(), fluid.Executor(fluid.CPUPlace())
    with fluid.scope_guard(scope):
        exe.run(startup)

    def step():
        with fluid.scope_guard(scope):
            return float(exe.run(main, feed=feed, fetch_list=[loss])[0].reshape(-1)[0])
    return step


def torch_step(torch, name, batch):
    model = _torch_models(torch)[name]()
    opt = torch.optim.SGD(model.parameters(), lr=LR)
    gen = torch.Generator().manual_seed(0)
    x = torch.rand((batch,) + NETS[name][1], generator=gen)
    y = torch.randint(0, 10, (batch,), generator=gen)

    def step():
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss.item()
    return step


def _status_kb(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return None


def step_peak_mb(who, name, batch):
    """Growth of the resident set's high-water mark over the first step of ``who`` ("minifluid" or "torch")
    in a fresh process: model built and initialised before the mark is taken, so it measures what one
    step allocates (activations, gradients, workspaces)."""
    proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--peak", who, name, str(batch)],
                          capture_output=True, text=True, timeout=600)
    return float(proc.stdout.strip()) if proc.returncode == 0 else None


def _peak_main(who, name, batch):
    if who == "torch":
        import torch  # noqa: PLC0415 - optional comparison
        torch.set_num_threads(os.cpu_count() or 1)
        step = torch_step(torch, name, batch)
    else:
        step = minifluid_step(name, batch)
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # VmHWM := VmRSS
    before = _status_kb("VmRSS")
    step()
    print(round((_status_kb("VmHWM") - before) / 1024, 1))


def compare(name, batch, warmup, steps):
    """One JSON-ready dict: minifluid's (and torch's) median step time, their ratio and step peak memory."""
    try:
        import torch  # noqa: PLC0415 - optional comparison
    except ImportError:
        torch = None
    fns = {"minifluid": minifluid_step(name, batch)}
    if torch is not None:
        torch.set_num_threads(os.cpu_count() or 1)
        torch.manual_seed(0)
        fns["torch"] = torch_step(torch, name, batch)
    result = {"batch": batch, "threads": os.cpu_count(), "steps": steps}
    for who, fn in fns.items():
        result[f"{who}_first_loss"] = round(fn(), 4)
    for _ in range(warmup):
        for fn in fns.values():
            fn()
    times = {who: [] for who in fns}
    for _ in range(steps):
        for who, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            times[who].append(time.perf_counter() - t0)
    for who in fns:
        result[f"{who}_step_ms"] = round(statistics.median(times[who]) * 1e3, 2)
    if torch is not None:
        result["speed_vs_torch"] = round(result["torch_step_ms"] / result["minifluid_step_ms"], 3)
        result["torch"] = torch.__version__
    else:
        result["torch"] = "unavailable (pip install torch in a side environment to compare)"
    if name == "resnet20":
        for who in fns:
            result[f"{who}_step_peak_rss_mb"] = step_peak_mb(who, name, batch)
    return result


def profile(name, batch, steps, top=8):
    """Where one step's time goes, per op: minifluid's ops by type (the executor's per-op timing,
    minifluid/executor/timing.py) and, when importable, torch's operators by self CPU time (torch.profiler,
    whose own cost inflates its figures a little), both in ms per step over ``steps`` steps after a warm-up,
    the ``top`` largest of each; ``step_ms`` is each one's wall time per profiled step."""
    from minifluid.executor import timing  # noqa: PLC0415
    step = minifluid_step(name, batch)
    step()
    timing.recorder = recorder = timing.Recorder()
    try:
        t0 = time.perf_counter()
        for _ in range(steps):
            step()
        wall = time.perf_counter() - t0
    finally:
        timing.recorder = None
    per_op = {}
    for (_, op_type), row in recorder.rows.items():
        per_op[op_type] = per_op.get(op_type, 0.0) + row[1]
    result = {"minifluid": _top_ms(per_op, steps, top, wall)}
    try:
        import torch  # noqa: PLC0415 - optional comparison
        from torch.profiler import ProfilerActivity  # noqa: PLC0415
    except ImportError:
        return result
    torch.set_num_threads(os.cpu_count() or 1)
    step = torch_step(torch, name, batch)
    step()
    with torch.profiler.profile(activities=[ProfilerActivity.CPU]) as prof:
        t0 = time.perf_counter()
        for _ in range(steps):
            step()
        wall = time.perf_counter() - t0
    per_op = {e.key: e.self_cpu_time_total / 1e6 for e in prof.key_averages()}
    result["torch"] = _top_ms(per_op, steps, top, wall)
    return result


def _top_ms(seconds_by_op, steps, top, wall):
    ranked = sorted(seconds_by_op.items(), key=lambda kv: -kv[1])[:top]
    return {"step_ms": round(wall / steps * 1e3, 1), "ops_ms": {k: round(v / steps * 1e3, 1) for k, v in ranked}}


# --- conv2d_transpose against conv2d on the same shapes ---------------------------------------------------
# (name, conv2d_transpose input [N, C, H, W], filter [C, F, k, k], stride, padding): the DCGAN generator's
# up-sampling layers at batch 64. Its conv2d twin is the conv whose adjoint it is: input [N, F, OH, OW],
# the same filter read as [C, F, k, k] (C output channels), so both do the same multiply-adds.
TRANSPOSE_SHAPES = (("7to14-s2-k4", (64, 128, 7, 7), (128, 64, 4, 4), 2, 1),
                    ("14to28-s2-k4", (64, 64, 14, 14), (64, 1, 4, 4), 2, 1),
                    ("14to14-s1-k3", (64, 32, 14, 14), (32, 32, 3, 3), 1, 1))


def _channels_last(x):
    """NCHW ``x`` in the channels-last memory that minifluid's conv, pool and batch_norm outputs have
    (NOTE [ Channels-last inside the kernels ] in minifluid/ops/im2col.py)."""
    return np.ascontiguousarray(x.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)


def transpose_vs_conv(steps, shapes=TRANSPOSE_SHAPES):
    """Median forward + backward (input and filter gradients) kernel time of conv2d_transpose and of its
    conv2d twin per shape, alternating, both fed channels-last inputs as inside a network; ``ratio`` =
    transpose / conv (the goal: at most 1.5)."""
    from minifluid.ops.registry import get_op_spec  # noqa: PLC0415
    rng = np.random.RandomState(0)
    result = {}
    for name, x_shape, w_shape, stride, pad in shapes:
        attrs_t = dict(get_op_spec("conv2d_transpose").attrs, strides=[stride] * 2, paddings=[pad] * 2)
        attrs_c = dict(get_op_spec("conv2d").attrs, strides=[stride] * 2, paddings=[pad] * 2)
        x = _channels_last(rng.randn(*x_shape).astype("float32"))
        w = rng.randn(*w_shape).astype("float32")
        spec_t, spec_c = get_op_spec("conv2d_transpose"), get_op_spec("conv2d")
        y = spec_t.kernel(attrs_t, x, w)
        xc = _channels_last(rng.randn(*y.shape).astype("float32"))  # the twin conv's input: the transpose's output

        def run_transpose():
            out = spec_t.kernel(attrs_t, x, w)
            spec_t.grad(attrs_t, (x, w), (out,), (np.ones_like(out),), (True, True))

        def run_conv():
            out = spec_c.kernel(attrs_c, xc, w, None, None)
            spec_c.grad(attrs_c, (xc, w, None, None), (out,), (np.ones_like(out),), (True, True, False, False))
        times = {"transpose": [], "conv": []}
        for i in range(steps + 2):
            for who, fn in (("transpose", run_transpose), ("conv", run_conv)):
                t0 = time.perf_counter()
                fn()
                if i >= 2:  # two warm-up rounds
                    times[who].append(time.perf_counter() - t0)
        t_ms, c_ms = (statistics.median(times[k]) * 1e3 for k in ("transpose", "conv"))
        result[name] = {"conv2d_transpose_ms": round(t_ms, 2), "conv2d_ms": round(c_ms, 2),
                        "ratio": round(t_ms / c_ms, 3)}
    return result


if __name__ == "__main__":
    if sys.argv[1:2] == ["--peak"]:
        _peak_main(sys.argv[2], sys.argv[3], int(sys.argv[4]))
