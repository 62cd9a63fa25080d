"""Pure-Python reader decorators: a *reader* is a zero-argument callable returning an iterable of samples.

Every function here takes one or more readers and returns a new reader; nothing is read until the
returned reader is called and iterated (except ``cache``, which reads once at decoration time, as fluid
does). The decorators that start threads or processes live in ``minifluid.reader.parallel``.
"""
import itertools
import random

from minifluid.data.loops import END_OF_DATA  # compose's mark for a reader with no more samples
from minifluid.errors import ComposeNotAligned

__all__ = ["batch", "cache", "chain", "compose", "firstn", "map_readers", "shuffle"]


def batch(reader, batch_size, drop_last=False):
    """Group samples into lists of ``batch_size``.

    Args:
        reader (callable): sample reader.
        batch_size (int): samples per batch; checked now, not when the batch reader runs.
        drop_last (bool, default False): drop the final batch when it is shorter than ``batch_size``.

    Returns:
        A batch reader yielding lists of samples.

    Raises:
        ValueError: ``batch_size`` is not positive (fluid's message, typo included).
    """
    batch_size = int(batch_size)
    if batch_size <= 0:
        raise ValueError("batch_size should be a positive integeral value, "
                         "but got batch_size={}".format(batch_size))

    def batch_reader():
        samples = []
        for sample in reader():
            samples.append(sample)
            if len(samples) == batch_size:
                yield samples
                samples = []
        if samples and not drop_last:
            yield samples

    return batch_reader


def shuffle(reader, buf_size):
    """Shuffle within a sliding window: fill ``buf_size`` samples, shuffle them with ``random``, emit them.

    The remainder is shuffled and emitted at the end, so the output is always a permutation of the
    input. ``buf_size <= 1`` leaves the order unchanged.

    Args:
        reader (callable): sample reader.
        buf_size (int): window size.
    """

    def shuffled_reader():
        window = []
        for sample in reader():
            window.append(sample)
            if len(window) >= buf_size:
                random.shuffle(window)
                yield from window
                window = []
        random.shuffle(window)
        yield from window

    return shuffled_reader


def _as_tuple(sample):
    return sample if isinstance(sample, tuple) else (sample,)


def compose(*readers, check_alignment=True):
    """Zip readers into one flat tuple per step: ``(1, 2)`` and ``3`` become ``(1, 2, 3)``.

    Args:
        *readers (callable): sample readers, read in lock step.
        check_alignment (bool, default True): raise when the readers have different lengths;
            when False, stop silently at the shortest reader.

    Raises:
        ComposeNotAligned: (a ValueError) after the common prefix has been yielded, when one
            reader ends before the others and ``check_alignment`` is True.
    """

    def composed_reader():
        iterators = [iter(r()) for r in readers]
        while True:
            samples = [next(it, END_OF_DATA) for it in iterators]
            ended = [s is END_OF_DATA for s in samples]
            if all(ended):
                return
            if any(ended):
                if check_alignment:
                    raise ComposeNotAligned("outputs of readers are not aligned.")
                return
            yield tuple(itertools.chain.from_iterable(_as_tuple(s) for s in samples))

    return composed_reader


def chain(*readers):
    """Read each reader to the end, one after another."""

    def chained_reader():
        for r in readers:
            yield from r()

    return chained_reader


def map_readers(func, *readers):
    """Apply ``func`` to the samples of ``readers`` taken in lock step; stop at the shortest reader.

    Example:
        ``map_readers(operator.add, r1, r2)`` yields ``a + b`` for each pair.
    """

    def mapped_reader():
        yield from map(func, *[r() for r in readers])

    return mapped_reader


def firstn(reader, n):
    """Yield at most ``n`` samples of ``reader`` (and read no more than that from it).

    Raises:
        ValueError: ``n`` is negative (fluid silently yielded everything then).
    """
    if n < 0:
        raise ValueError("firstn needs n >= 0, but got n={}".format(n))

    def limited_reader():
        yield from itertools.islice(reader(), n)

    return limited_reader


def cache(reader):
    """Read ``reader`` once, now, and replay the stored samples on every call.

    Returns:
        A reader yielding the same samples (the same objects) each time it is called.
    """
    samples = tuple(reader())

    def cached_reader():
        yield from samples

    return cached_reader
