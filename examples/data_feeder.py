"""Seed 004: DataFeeder turns reader minibatches into feeds (dtype cast, reshape, LoD).

Covers ``feed`` (images reshaped to the declared [1, 8, 8]), a LoD feed of variable-length
sequences, ``feed_parallel`` and ``decorate_reader`` for two places, then trains a small
conv net with ``exe.run(feed=feeder.feed(data))`` on the digits, showing a tqdm progress bar
when tqdm is installed.

Run:  python examples/data_feeder.py
"""
import numpy as np

import minifluid as fluid
from minifluid.dataset import digits

try:
    from tqdm import tqdm
except ImportError:  # progress bars are optional
    def tqdm(iterable, **_):
        return iterable


def main():
    np.random.seed(0)
    place = fluid.CPUPlace()
    main_program, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main_program, startup):
        img = fluid.layers.data(name="image", shape=[1, 8, 8])
        label = fluid.layers.data(name="label", shape=[1], dtype="int64")
        words = fluid.layers.data(name="words", shape=[1], dtype="int64", lod_level=1)
        conv = fluid.layers.conv2d(img, num_filters=8, filter_size=3, padding=1, act="relu")
        predict = fluid.layers.fc(fluid.layers.pool2d(conv, 2, pool_stride=2), size=10, act="softmax")
        cost = fluid.layers.mean(fluid.layers.cross_entropy(input=predict, label=label))
        fluid.optimizer.Adam(learning_rate=0.01).minimize(cost)

    feeder = fluid.DataFeeder([img, label], place)
    result = feeder.feed([([0] * 64, [9]), ([1] * 64, [1])])
    print("feed:", {k: (v.shape(), np.array(v).dtype.name) for k, v in result.items()})

    lod_feeder = fluid.DataFeeder([words], place, program=main_program)
    lod = lod_feeder.feed([([1, 2, 3],), ([4, 5],), ([6, 7, 8, 9],)])["words"]
    print("LoD feed: shape", lod.shape(), "lengths", lod.recursive_sequence_lengths())

    batches = [[(np.ones(64), [1])] * 4, [(np.zeros(64), [0])] * 4]
    print("feed_parallel:", [d["image"].shape() for d in feeder.feed_parallel(batches, num_places=2)])
    multi = feeder.decorate_reader(fluid.io.batch(digits.train(), 32), multi_devices=True, num_places=2)
    print("decorate_reader(2 places): first step has", len(next(multi())), "per-place feeds")

    exe = fluid.Executor(place)
    exe.run(startup)
    train_reader = fluid.io.batch(fluid.io.shuffle(digits.train(), buf_size=2048), batch_size=64)
    for epoch in range(2):
        costs = [exe.run(main_program, feed=feeder.feed(data), fetch_list=[cost])[0]
                 for data in tqdm(train_reader(), desc=f"epoch {epoch}", leave=False)]
        print(f"epoch {epoch}: {len(costs)} batches, mean cost {float(np.mean(costs)):.4f}")


if __name__ == "__main__":
    main()
