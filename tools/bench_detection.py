"""Time of SSD's detection layers through the Executor at SSD300's evaluation shape: detection_output (decode,
softmax, multiclass_nms with nms_top_k 400 / keep_top_k 200), matrix_nms on the same scores, and one ssd_loss
step (the loss and its gradient with respect to the predictions, 3 ground-truth boxes per image).

Batch: 8 images, 8,732 priors, 21 classes, random predictions (most class scores above 0.01, so every class
brings its 400 candidates). Prints ONE JSON line: median ms of each over ``--steps`` runs after a warm-up, and how
many detections each NMS kept.

Run: python tools/bench_detection.py [--steps 5] [--threads 1]
"""
import argparse
import json
import statistics
import time

import numpy as np

import minifluid as fluid
from minifluid.ops import blas as _blas

L = fluid.layers
BATCH, PRIORS, CLASSES, GT = 8, 8732, 21, 3


def _inputs():
    return (fluid.data("loc", [None, PRIORS, 4]), fluid.data("conf", [None, PRIORS, CLASSES]),
            fluid.data("prior", [PRIORS, 4]), fluid.data("var", [PRIORS, 4]))


def _programs():
    infer, infer_matrix, train = fluid.Program(), fluid.Program(), fluid.Program()
    with fluid.program_guard(infer, fluid.Program()):
        loc, conf, prior, var = _inputs()
        dets = L.detection_output(loc, conf, prior, var, nms_threshold=0.45)
    with fluid.program_guard(infer_matrix, fluid.Program()):
        loc, conf, prior, var = _inputs()
        boxes = L.box_coder(prior, var, loc, code_type="decode_center_size")
        matrix = L.matrix_nms(boxes, L.transpose(L.softmax(conf), [0, 2, 1]), 0.01, 0.01, 400, 200)
    with fluid.program_guard(train, fluid.Program()):
        loc, conf, prior, var = _inputs()
        gt_box, gt_label = fluid.data("gt_box", [None, 4], lod_level=1), fluid.data("gt_label", [None, 1], "int32",
                                                                                    lod_level=1)
        loc.stop_gradient = conf.stop_gradient = False
        loss = L.reduce_sum(L.ssd_loss(loc, conf, gt_box, gt_label, prior, var))
        grads = fluid.gradients([loss], [loc, conf])
    return (infer, [dets]), (infer_matrix, [matrix]), (train, [loss] + grads)


def _median_ms(exe, program, feed, fetch, steps):
    exe.run(program, feed=feed, fetch_list=fetch, return_numpy=False)
    times, out = [], None
    for _ in range(steps):
        start = time.perf_counter()
        out = exe.run(program, feed=feed, fetch_list=fetch, return_numpy=False)
        times.append(time.perf_counter() - start)
    return round(statistics.median(times) * 1e3, 1), out


def _options():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=5, help="timed runs of each program (after one warm-up)")
    parser.add_argument("--threads", type=int, default=1, help="BLAS threads")
    return parser.parse_args()


def main():
    args = _options()
    _blas.set_num_threads(args.threads)
    rng = np.random.default_rng(0)
    xy = rng.random((PRIORS, 2))
    prior = np.concatenate([xy, xy + rng.random((PRIORS, 2)) * 0.3 + 0.01], 1).astype("float32")
    var = np.tile(np.array([0.1, 0.1, 0.2, 0.2], "float32"), (PRIORS, 1))
    feed = {"loc": rng.standard_normal((BATCH, PRIORS, 4)).astype("float32"),
            "conf": (rng.standard_normal((BATCH, PRIORS, CLASSES)) * 2).astype("float32"), "prior": prior, "var": var}
    xy = rng.random((BATCH * GT, 2)) * 0.6
    gt = np.concatenate([xy, xy + rng.random((BATCH * GT, 2)) * 0.3 + 0.05], 1).astype("float32")
    labels = rng.integers(1, CLASSES, (BATCH * GT, 1)).astype("int32")
    train_feed = dict(feed, gt_box=fluid.create_lod_tensor(gt, [[GT] * BATCH], fluid.CPUPlace()),
                      gt_label=fluid.create_lod_tensor(labels, [[GT] * BATCH], fluid.CPUPlace()))
    (infer, dets), (infer_matrix, matrix), (train, train_fetch) = _programs()
    exe = fluid.Executor(fluid.CPUPlace())
    nms_ms, (got,) = _median_ms(exe, infer, feed, dets, args.steps)
    matrix_ms, (got_matrix,) = _median_ms(exe, infer_matrix, feed, matrix, args.steps)
    loss_ms, _ = _median_ms(exe, train, train_feed, train_fetch, args.steps)
    print(json.dumps({"batch": BATCH, "priors": PRIORS, "classes": CLASSES, "detection_output_ms": nms_ms,
                      "detections": int(np.asarray(got).shape[0]), "matrix_nms_ms": matrix_ms,
                      "matrix_detections": int(np.asarray(got_matrix).shape[0]), "ssd_loss_step_ms": loss_ms}))


if __name__ == "__main__":
    main()
