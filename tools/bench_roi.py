"""Time of the ROI pooling ops through the Executor: each op's forward plus d(sum out)/d(feature map), as a
Faster R-CNN head runs them.

Feature map: 2 images x 256 channels x 38 x 50 (stride 16 of a 608 x 800 image); 512 ROIs (256 per image) of
16 to 400 pixels a side, pooled to 7 x 7 (psroi_pool: 10 output channels over 490 input channels). Prints ONE
JSON line: median ms per step of each op.

Run: python tools/bench_roi.py [--steps 5]
"""
import argparse
import json
import statistics
import time

import numpy as np

import minifluid as fluid

N, C, H, W, ROIS, POOLED = 2, 256, 38, 50, 512, 7
OPS = {
    "roi_align": lambda x, r: fluid.layers.roi_align(x, r, POOLED, POOLED, 1 / 16, sampling_ratio=2),
    "roi_align_adaptive": lambda x, r: fluid.layers.roi_align(x, r, POOLED, POOLED, 1 / 16),
    "roi_pool": lambda x, r: fluid.layers.roi_pool(x, r, POOLED, POOLED, 1 / 16),
    "psroi_pool": lambda x, r: fluid.layers.psroi_pool(x, r, 10, 1 / 16, POOLED, POOLED),
    "prroi_pool": lambda x, r: fluid.layers.prroi_pool(x, r, 1 / 16, POOLED, POOLED),
}


def _program(build, channels):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [None, channels, H, W], "float32")
        x.stop_gradient = False
        rois = fluid.data("rois", [None, 4], "float32", lod_level=1)
        out = build(x, rois)
        dx = fluid.gradients([fluid.layers.reduce_sum(out)], [x])[0]
    return main, [out, dx]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=5)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    corner = rng.uniform(0, W * 16 * 0.8, (ROIS, 2))
    rois = np.concatenate([corner, corner + rng.uniform(16, 400, (ROIS, 2))], 1).astype("float32")
    feed_rois = fluid.create_lod_tensor(rois, [[ROIS // 2] * 2], fluid.CPUPlace())
    exe, result = fluid.Executor(fluid.CPUPlace()), {}
    for name, build in OPS.items():
        channels = 490 if name == "psroi_pool" else C
        prog, fetch = _program(build, channels)
        feed = {"x": rng.standard_normal((N, channels, H, W)).astype("float32"), "rois": feed_rois}
        exe.run(prog, feed=feed, fetch_list=fetch)  # warm-up
        times = []
        for _ in range(args.steps):
            start = time.perf_counter()
            exe.run(prog, feed=feed, fetch_list=fetch)
            times.append(time.perf_counter() - start)
        result[name + "_ms"] = round(statistics.median(times) * 1e3, 1)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
