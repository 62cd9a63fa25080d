"""Seed 003: the reader interface and its decorators, on the embedded digits.

Shows a sample reader, reader creators, ``batch``, ``shuffle``, ``buffered``, ``compose`` (real
digits next to random images and constant flags, as in the GAN example of the guide),
``map_readers``, ``firstn``, ``xmap_readers`` and ``cache``, printing what each yields.

Run:  python examples/reader_decorators.py
"""
import numpy as np

import minifluid as fluid
from minifluid.dataset import digits


def reader_creator_random_image(width, height):
    def reader():
        while True:
            yield np.random.uniform(-1, 1, size=width * height)
    return reader


def reader_creator_bool(t):
    def reader():
        while True:
            yield t
    return reader


def main():
    np.random.seed(0)
    train = digits.train()
    first = next(train())
    print("one digits sample:", first[0].shape, first[0].dtype, "label", first[1])

    batch_reader = fluid.io.batch(train, batch_size=128)
    sizes = [len(b) for b in batch_reader()]
    print("batch(train, 128):", len(sizes), "batches, last one has", sizes[-1], "samples")

    shuffled = fluid.io.shuffle(train, buf_size=512)
    labels = [label for _, label in shuffled()]
    print("shuffle keeps every sample:", sorted(labels) == sorted(label for _, label in train()))

    buffered = fluid.io.buffered(train, size=100)
    print("buffered yields", sum(1 for _ in buffered()), "samples")

    composed = fluid.io.compose(train, reader_creator_random_image(20, 20), reader_creator_bool(True),
                                reader_creator_bool(False), check_alignment=False)
    item = next(composed())
    print("compose:", len(item), "columns:", [np.shape(c) for c in item])

    doubled = fluid.io.map_readers(lambda sample: (sample[0] * 2, sample[1]), fluid.io.firstn(train, 5))
    print("map_readers(firstn 5):", [round(float(img.max()), 2) for img, _ in doubled()])

    flipped = fluid.io.xmap_readers(lambda s: (s[0][::-1], s[1]), fluid.io.firstn(train, 50),
                                    process_num=2, buffer_size=8, order=True)
    print("xmap_readers(order=True) labels:", [label for _, label in flipped()][:10])

    cached = fluid.io.cache(fluid.io.firstn(train, 3))
    print("cache replays:", [label for _, label in cached()] == [label for _, label in cached()])


if __name__ == "__main__":
    main()
