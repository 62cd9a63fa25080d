"""``set_*_generator`` inputs, each turned into one thing: a batch reader.

A *batch reader* is a zero-argument callable returning an iterator of batches; a batch is a list
with one field (ndarray, or LoDTensor for LoD slots) per feed variable. Everything downstream (the
producer thread, a worker process, the queue, the read op) only ever sees batch readers:

    sample generator --batched--> sample-list generator --converted--> batch generator --checked--> batch reader

Conversion runs where the batch reader is iterated, i.e. in the producer thread or worker process,
never in the consumer.
"""
from itertools import islice

import numpy as np

from ..errors import ConversionFailed
from ..lod_tensor import LoDTensor
from .feed_errors import RAGGED_BATCH_MESSAGE, batch_field_error, describe_value
from .feeder import convert_or_defer, convert_sample_list, make_converters
from .loops import close_iterator

__all__ = ["from_sample_generator", "from_sample_list_generator", "from_batch_generator", "as_batch_field",
           "FIELD_COUNT_MESSAGE", "RAGGED_BATCH_MESSAGE"]

FIELD_COUNT_MESSAGE = (
    "The sample number of reader's input data and the input number of feed list are not equal. Possible reasons "
    "are: The generator is decorated by `paddle.batch` and configured by `set_batch_generator`, but here need to "
    "used `set_sample_list_generator`.")

def _field_count_error(got, expected):
    return ValueError(f"{FIELD_COUNT_MESSAGE} (got {got} fields, the feed list has {expected})")


def from_sample_generator(reader, batch_size, drop_last, specs):
    """Samples -> lists of ``batch_size`` samples (the final short one kept unless ``drop_last``) -> batches."""
    def sample_list_reader():
        samples = iter(reader())
        try:
            while True:
                chunk = list(islice(samples, batch_size))
                if len(chunk) < batch_size:
                    if chunk and not drop_last:
                        yield chunk
                    return
                yield chunk
        finally:
            close_iterator(samples)
    return from_sample_list_generator(sample_list_reader, specs)


def from_sample_list_generator(reader, specs):
    """Lists of samples -> batches, cast and reshaped per slot like ``DataFeeder.feed`` (REFERENCE H50).
    ``specs`` None (dygraph, no feed list): one field per sample position, stacked as given (no cast)."""
    return _SampleListBatches(reader, None if specs is None else make_converters(specs))


class _SampleListBatches:
    """The batch reader of ``from_sample_list_generator``. A worker process iterates ``deferred()``
    instead of calling it: big fields then come as ``DeferredField``s that its shared-memory writer
    stacks straight into the slot (one copy of the bytes instead of two)."""

    def __init__(self, reader, converters):
        self._reader, self._converters = reader, converters

    def __call__(self):
        return self._batches(convert_sample_list)

    def deferred(self):
        return self._batches(convert_or_defer)

    def _batches(self, convert):
        converters = self._converters
        sample_lists = iter(self._reader())
        try:
            for index, samples in enumerate(sample_lists):
                try:  # a failure here is the conversion's, not the reader's (errors.ConversionFailed)
                    if converters is None:
                        batch = [as_batch_field(column, i, None, index) for i, column in enumerate(zip(*samples))]
                    else:
                        batch = convert(samples, converters, _field_count_error)
                except Exception as e:
                    raise ConversionFailed(e, index) from None
                yield batch
        finally:
            close_iterator(sample_lists)


def as_batch_field(item, position=None, name=None, batch_index=None, copy=False):
    """An ndarray or LoDTensor as given (no dtype cast; a copy of it with ``copy``); anything else through
    ``np.asarray``. ``position``, ``name`` and ``batch_index`` say which field it is, for errors."""
    if type(item) is np.ndarray:
        if item.dtype.hasobject:
            raise batch_field_error(position, name, item, batch_index, ragged=True)
        return item.copy() if copy else item
    if isinstance(item, LoDTensor):
        return LoDTensor(item._array.copy(), item._lod, item._placement) if copy else item
    if hasattr(item, "__cuda_array_interface__"):
        return item.copy() if copy else item
    if item is None or isinstance(item, (dict, str, bytes)):
        raise batch_field_error(position, name, item, batch_index, ragged=False)
    try:
        arr = np.asarray(item)
    except ValueError:
        raise batch_field_error(position, name, item, batch_index, ragged=True) from None
    if arr.dtype.hasobject:
        raise batch_field_error(position, name, item, batch_index, ragged=True)
    return arr


def _checked_batch(batch, names, index, copy):
    """The fields of one ``set_batch_generator`` batch, or the error saying what is wrong with it."""
    expected = "a list or tuple of arrays, one per feed variable in feed_list order" + \
        (f" ({len(names)}: {names})" if names is not None else "")
    if isinstance(batch, dict):  # iterating it would feed its keys as data
        raise TypeError(f"set_batch_generator: each batch must be {expected}; got a dict with keys {list(batch)[:8]} "
                        f"(batch {index}, counting from 0)")
    if not isinstance(batch, (list, tuple)) and not hasattr(batch, "__len__"):
        raise TypeError(f"set_batch_generator: batch {index} (counting from 0) is {describe_value(batch)}; "
                        f"expected {expected}")
    if names is not None and len(batch) != len(names):
        raise _field_count_error(len(batch), len(names))
    return [as_batch_field(item, i, names and names[i], index, copy) for i, item in enumerate(batch)]


def from_batch_generator(reader, names):
    """Batches of per-slot arrays or LoDTensors, checked for the field count against the feed variables
    ``names`` (unless None, dygraph) and for fields that are None, ragged or not arrays."""
    return _BatchGeneratorBatches(reader, names)


class _BatchGeneratorBatches:
    """The batch reader of ``from_batch_generator``.

    NOTE [ Batches are copied when they are made ]
    A generator may refill one buffer for every batch (``buf[:] = ...; yield buf, label``). The queue
    holds up to ``capacity`` batches, so holding references would hand out the last contents many
    times over. Each batch is therefore copied as the reader gives it, in the producer thread, as
    fluid's push copies into a LoDTensor; a worker process (``deferred()``) copies it into shared memory
    instead, which is the same guarantee for the same one copy. Proving that nothing writes to an
    array later would rest on reference counts (of the array, its container, every view), which
    depend on how each CPython version counts; a wrong proof is silent corruption. The cost is one more
    pass over the batch's bytes in the producer thread (``batch_copy_us_per_batch`` in
    tools/bench_loader.py: 7 us for a 200 KB batch in cache, 50-115 us from memory on the shared 2-vCPU
    VM), which a model that reads its batch once pays again; readers that make fresh arrays lose the
    same as readers that reuse one.
    """

    def __init__(self, reader, names):
        self._reader, self._names = reader, names

    def __call__(self):
        return self._batches(copy=True)

    def deferred(self):
        """For a worker process: its shared-memory writer copies the fields (no copy here)."""
        return self._batches(copy=False)

    def _batches(self, copy):
        names, batches = self._names, iter(self._reader())
        try:
            for index, batch in enumerate(batches):
                try:
                    fields = _checked_batch(batch, names, index, copy)
                except Exception as e:
                    raise ConversionFailed(e, index) from None
                yield fields
        finally:
            close_iterator(batches)
