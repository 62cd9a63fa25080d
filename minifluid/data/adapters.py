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

from ..lod_tensor import LoDTensor
from .feeder import convert_or_defer, convert_sample_list, make_converters

__all__ = ["from_sample_generator", "from_sample_list_generator", "from_batch_generator", "as_batch_field",
           "FIELD_COUNT_MESSAGE", "RAGGED_BATCH_MESSAGE"]

FIELD_COUNT_MESSAGE = (
    "The sample number of reader's input data and the input number of feed list are not equal. Possible reasons "
    "are: The generator is decorated by `paddle.batch` and configured by `set_batch_generator`, but here need to "
    "used `set_sample_list_generator`.")

RAGGED_BATCH_MESSAGE = (
    "\n\tFaild to convert input data to a regular ndarray :\n\t* Usually this means the input data contains "
    "nested lists with different lengths. \n\t* Check the reader function passed to 'set_batch_generator' "
    "to locate the data causes this issue.\n\t* Please consider using 'fluid.create_lod_tensor' to convert "
    "it to a LoD-Tensor.")


def _field_count_error(got, expected):
    return ValueError(f"{FIELD_COUNT_MESSAGE} (got {got} fields, the feed list has {expected})")


def _close(iterator):
    close = getattr(iterator, "close", None)
    if close is not None:
        close()


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
            _close(samples)
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
            for samples in sample_lists:
                if converters is None:
                    yield [as_batch_field(column) for column in zip(*samples)]
                else:
                    yield convert(samples, converters, _field_count_error)
        finally:
            _close(sample_lists)


def as_batch_field(item):
    """An ndarray or LoDTensor as given (no dtype cast); anything else through ``np.asarray``."""
    if type(item) is np.ndarray:
        if item.dtype.hasobject:
            raise TypeError(RAGGED_BATCH_MESSAGE)
        return item
    if isinstance(item, LoDTensor) or hasattr(item, "__cuda_array_interface__"):
        return item
    try:
        arr = np.asarray(item)
    except ValueError as e:
        raise TypeError(RAGGED_BATCH_MESSAGE) from e
    if arr.dtype.hasobject:
        raise TypeError(RAGGED_BATCH_MESSAGE)
    return arr


def from_batch_generator(reader, num_slots):
    """Batches of per-slot arrays or LoDTensors, checked for the field count (unless ``num_slots`` is
    None, dygraph) and for ragged data."""
    def batch_reader():
        batches = iter(reader())
        try:
            for batch in batches:
                if isinstance(batch, dict):  # iterating it would feed its keys as data
                    raise TypeError("set_batch_generator: each batch must be a list or tuple of arrays, one per "
                                    f"feed variable in feed_list order; got a dict with keys {list(batch)[:8]}")
                if num_slots is not None and len(batch) != num_slots:
                    raise _field_count_error(len(batch), num_slots)
                yield [as_batch_field(item) for item in batch]
        finally:
            _close(batches)
    return batch_reader
