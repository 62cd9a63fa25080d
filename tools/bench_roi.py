"""Time of the ROI pooling, deformable and YOLO ops through the Executor: each op's forward plus
d(sum out)/d(feature map), as detection heads run them.

Feature map: 2 images x 256 channels x 38 x 50 (stride 16 of a 608 x 800 image); 512 ROIs (256 per image) of
16 to 400 pixels a side, pooled to 7 x 7 (psroi_pool: 10 output channels over 490 input channels;
deformable_roi_pooling: 4 samples per bin, offsets per bin). deformable_conv: 3 x 3, 256 -> 256 channels on the
same map, offsets and mask fed. yolov3_loss: a 19 x 19 head over 3 anchors and 80 classes, 8 images of 50 boxes
(20 real). Prints ONE JSON line: median ms per step of each op.

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
    "deformable_roi_pooling": lambda x, r: fluid.layers.deformable_roi_pooling(
        x, r, fluid.layers.fill_constant([ROIS, 2, POOLED, POOLED], "float32", 0.1), spatial_scale=1 / 16,
        pooled_height=POOLED, pooled_width=POOLED, sample_per_part=2),
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


def _median_ms(exe, prog, feed, fetch, steps):
    """The median wall time of ``steps`` runs after one warm-up run, in ms."""
    exe.run(prog, feed=feed, fetch_list=fetch)
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        exe.run(prog, feed=feed, fetch_list=fetch)
        times.append(time.perf_counter() - start)
    return round(statistics.median(times) * 1e3, 1)


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
        result[name + "_ms"] = _median_ms(exe, prog, feed, fetch, args.steps)
    for name, (prog, fetch, feed) in _other_programs(rng).items():
        result[name + "_ms"] = _median_ms(exe, prog, feed, fetch, args.steps)
    print(json.dumps(result))


def _other_programs(rng):
    """deformable_conv and yolov3_loss programs: {name: (program, fetch list, feed)}."""
    progs = {}
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        x = fluid.data("x", [None, C, H, W], "float32")
        off = fluid.data("off", [None, 18, H, W], "float32")
        mask = fluid.data("mask", [None, 9, H, W], "float32")
        w = fluid.data("w", [C, C, 3, 3], "float32")
        for v in (x, off, mask, w):
            v.stop_gradient = False
        helper = fluid.layers.LayerHelper("deformable_conv")
        out = helper.create_variable_for_type_inference("float32")
        helper.append_op(type="deformable_conv", inputs={"Input": [x], "Offset": [off], "Mask": [mask], "Filter": [w]},
                         outputs={"Output": [out]}, attrs={"paddings": [1, 1]})
        grads = fluid.gradients([fluid.layers.reduce_sum(out)], [x, off, mask, w])
    progs["deformable_conv"] = (main, [out] + grads, {
        "x": rng.standard_normal((N, C, H, W)).astype("float32"), "w": rng.standard_normal((C, C, 3, 3)).astype("float32"),
        "off": rng.uniform(-2, 2, (N, 18, H, W)).astype("float32"), "mask": rng.random((N, 9, H, W)).astype("float32")})
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        head = fluid.data("head", [None, 3 * 85, 19, 19], "float32")
        head.stop_gradient = False
        box, label = fluid.data("box", [None, 50, 4], "float32"), fluid.data("label", [None, 50], "int32")
        loss = fluid.layers.yolov3_loss(head, box, label, [10, 13, 16, 30, 33, 23, 30, 61, 62, 45, 59, 119, 116, 90,
                                                           156, 198, 373, 326], [6, 7, 8], 80, 0.7, 32)
        dhead = fluid.gradients([fluid.layers.reduce_sum(loss)], [head])[0]
    boxes = np.zeros((8, 50, 4), "float32")
    boxes[:, :20, :2], boxes[:, :20, 2:] = rng.uniform(0.1, 0.9, (8, 20, 2)), rng.uniform(0.05, 0.6, (8, 20, 2))
    progs["yolov3_loss"] = (main, [loss, dhead], {"head": rng.standard_normal((8, 255, 19, 19)).astype("float32"),
                                                  "box": boxes, "label": rng.integers(0, 80, (8, 50)).astype("int32")})
    return progs


if __name__ == "__main__":
    main()
