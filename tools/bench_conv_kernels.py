"""conv2d input-gradient formulations on the LeNet / ResNet-20 shapes: the transposed convolution
(im2col of the padded output gradient @ flipped filter) against GEMM + col2im (kh*kw strided adds).

The two run alternately, call by call, and each line gives both medians and their ratio (the numbers
behind NOTE [ conv2d formulations ] in minifluid/ops/conv.py). Prints one JSON line.

Run: python tools/bench_conv_kernels.py [--reps 7]
"""
import argparse
import json
import statistics
import time

import numpy as np

from minifluid.ops import conv
from minifluid.ops.im2col import to_nhwc

SHAPES = {  # name: (input NCHW, filter, paddings)
    "lenet_conv2_5x5_20to50": ((128, 20, 12, 12), (50, 20, 5, 5), [0, 0]),
    "resnet_stage1_3x3_16": ((128, 16, 32, 32), (16, 16, 3, 3), [1, 1]),
    "resnet_stage2_3x3_32": ((128, 32, 16, 16), (32, 32, 3, 3), [1, 1]),
    "resnet_stage3_3x3_64": ((128, 64, 8, 8), (64, 64, 3, 3), [1, 1]),
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=7)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    result = {}
    for name, (xs, ws, pads) in SHAPES.items():
        attrs = {**conv._CONV_ATTRS, "paddings": pads}
        x4 = to_nhwc(rng.random(xs, dtype=np.float32), "NCHW")
        w = rng.random(ws, dtype=np.float32)
        geo = conv._conv_geometry(attrs, x4.shape, w.shape)
        d4 = rng.random((xs[0],) + geo.out + (ws[0],), dtype=np.float32)
        fns = {"transposed": lambda: conv._input_grad(geo, d4, w, x4.shape, 1),
               "col2im": lambda: conv._input_grad(geo, d4, w, x4.shape, 1, transposed=False)}
        np.testing.assert_allclose(fns["transposed"](), fns["col2im"](), rtol=1e-3, atol=1e-2)
        times = {k: [] for k in fns}
        for _ in range(args.reps):
            for k, fn in fns.items():
                t0 = time.perf_counter()
                fn()
                times[k].append(time.perf_counter() - t0)
        ms = {k: statistics.median(v) * 1e3 for k, v in times.items()}
        result[name] = {"transposed_ms": round(ms["transposed"], 2), "col2im_ms": round(ms["col2im"], 2),
                        "col2im_over_transposed": round(ms["col2im"] / ms["transposed"], 3)}
    print(json.dumps(result))


if __name__ == "__main__":
    main()
