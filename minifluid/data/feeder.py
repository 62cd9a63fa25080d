"""DataFeeder and the sample-list -> batch converters it shares with the DataLoader.

A *slot* is one feed variable as the feeding runtime sees it (``SlotSpec``: name, shape, dtype,
LoD level, whether it is feed-checked). Each slot gets a converter picked from ``CONVERTERS`` by its
kind ("dense" or "lod"); a converter turns one column of sample fields into one batch field (an
ndarray, or a LoDTensor for LoD slots). ``DataFeeder.feed`` and the loader's
``set_sample_generator`` / ``set_sample_list_generator`` all run ``convert_sample_list`` below, so
their results are equal element for element.
"""
from dataclasses import dataclass
from typing import Callable, NamedTuple

import numpy as np

from ..dtypes import to_numpy_dtype
from ..framework.program import default_main_program
from ..lod_tensor import LoDTensor
from ..places import _cpu_num, cuda_places
from .feed_errors import column_error, describe_value, sample_error

__all__ = ["DataFeeder", "SlotSpec", "CONVERTERS", "slot_specs", "make_converters", "convert_sample_list"]


@dataclass(frozen=True)
class SlotSpec:
    """One feed variable, as the feeding runtime needs it."""
    name: str
    shape: tuple
    dtype: np.dtype
    lod_level: int = 0
    need_check: bool = False

    @classmethod
    def from_var(cls, var):
        return cls(var.name, tuple(var.shape) if var.shape is not None else None, to_numpy_dtype(var.dtype),
                   int(var.lod_level or 0), bool(getattr(var, "need_check_feed", False)))


def slot_specs(feed_list, program=None):
    """SlotSpecs for ``feed_list`` (Variables, or names looked up in block 0 of ``program``)."""
    specs = []
    for var in feed_list:
        if isinstance(var, str):
            if program is None:
                raise ValueError(f"Cannot look up feed variable {var!r} by name without a program")
            var = program.global_block().var(var)
        if not all(hasattr(var, a) for a in ("name", "shape", "dtype", "lod_level")):
            raise TypeError("Feed list should contain a list of variable")
        specs.append(SlotSpec.from_var(var))
    return specs


def _reshape_target(shape):
    """fluid's rule: reshape to the declared shape unless it has more than one negative dim."""
    if shape is None or sum(1 for d in shape if d < 0) > 1:
        return None
    return tuple(shape)


def _reshaped(arr, target, name=None):
    if target is not None and arr.ndim != len(target):
        try:
            return arr.reshape(target)
        except ValueError as e:
            where = "" if name is None else f" (feed variable '{name}')"
            raise ValueError("Reshape error. What is defined in data layer is {}, but receive {}{}"
                             .format(target, arr.shape, where)) from e
    return arr


DEFER_MIN_BYTES = 1 << 14
"""Sample fields at least this big may be stacked straight into the batch's destination (see
``convert_or_defer``); below it one ``np.array`` call plus a copy is cheaper than a loop over rows."""


class DeferredField(NamedTuple):
    """A batch field not built yet: ``fill(out)`` stacks the samples into ``out`` (an uninitialised
    array of ``shape`` and ``dtype``, e.g. in shared memory) and returns the field (``out`` reshaped
    to the declared shape, a view). Saves the intermediate batch array and its copy."""
    shape: tuple
    dtype: np.dtype
    fill: Callable


class _DenseConverter:
    """Column of samples -> ndarray of the slot's dtype, reshaped like fluid's DataFeeder."""

    def __init__(self, spec):
        self.spec, self.dtype, self.target = spec, spec.dtype, _reshape_target(spec.shape)

    def __call__(self, column):
        try:
            arr = np.array(column, dtype=self.dtype)
        except (TypeError, ValueError) as e:
            raise column_error(self.spec, column, e) from None
        return _reshaped(arr, self.target, self.spec.name)

    def deferred(self, column):
        """``__call__`` as a DeferredField, when ``defer_stack`` takes the column; else None."""
        target, name = self.target, self.spec.name
        return defer_stack(column, self.dtype, lambda out: _reshaped(out, target, name))


def defer_stack(column, dtype, finish=None):
    """A DeferredField that stacks ``column`` into its destination as ``dtype`` (then ``finish(out)``,
    if given, makes the field), when every item is a plain ndarray of one shape and of at least
    DEFER_MIN_BYTES: stacking row by row then gives what ``np.array(column, dtype)`` gives. Else None."""
    first = column[0] if column else None
    if type(first) is not np.ndarray or first.nbytes < DEFER_MIN_BYTES or first.dtype.hasobject:
        return None
    shape = first.shape
    for item in column:
        if type(item) is not np.ndarray or item.shape != shape:
            return None

    def fill(out):
        for i, item in enumerate(column):
            out[i] = item
        return out if finish is None else finish(out)
    return DeferredField((len(column), *shape), np.dtype(dtype), fill)


def _flatten(field, depth, level, lengths, leaves):
    if depth == level:
        leaves.append(field)
        return
    lengths[depth].append(len(field))
    for sub in field:
        _flatten(sub, depth + 1, level, lengths, leaves)


class _LoDConverter:
    """Column of nested samples -> LoDTensor: the leaves stacked, their nesting as recursive lengths."""

    def __init__(self, spec):
        self.spec, self.target = spec, _reshape_target(spec.shape)

    def __call__(self, column):
        spec = self.spec
        lengths, leaves = [[] for _ in range(spec.lod_level)], []
        try:
            for field in column:
                _flatten(field, 0, spec.lod_level, lengths, leaves)
            arr = np.array(leaves, dtype=spec.dtype)
        except (TypeError, ValueError) as e:
            raise column_error(spec, column, e) from None
        return LoDTensor(_reshaped(arr, self.target, spec.name), lengths)


CONVERTERS = {"dense": _DenseConverter, "lod": _LoDConverter}
"""Converter factories by slot kind: ``factory(spec) -> convert(column) -> batch field``."""


def _kind(spec):
    return "lod" if spec.lod_level > 0 else "dense"


def make_converters(specs):
    return [CONVERTERS[_kind(spec)](spec) for spec in specs]


def _columns(samples, n, count_error):
    lengths = set(map(len, samples))
    if lengths and lengths != {n}:
        position, got = next((i, len(s)) for i, s in enumerate(samples) if len(s) != n)
        err = count_error(got, n)
        raise type(err)(f"{err} (sample {position} of the batch, counting from 0, has {got} field(s))") from None
    return zip(*samples) if samples else [()] * n


def _converted(samples, converters, count_error, convert_one):
    """The batch's fields; when conversion fails, a sample that is not a tuple of fields is blamed
    first (a dict's keys or a None would otherwise be misread as bad values in some column)."""
    if not isinstance(samples, (list, tuple)):
        if samples is None or isinstance(samples, (dict, str, bytes)):
            raise TypeError(f"a batch of samples is {describe_value(samples)}; expected a list of samples, each a "
                            f"tuple with one field per feed variable: {[c.spec.name for c in converters]}")
        samples = list(samples)
    try:
        return [convert_one(conv, column) for conv, column in
                zip(converters, _columns(samples, len(converters), count_error))]
    except (TypeError, ValueError):
        better = sample_error(samples, [c.spec.name for c in converters])
        if better is None:
            raise
        raise better from None


def _convert_now(conv, column):
    return conv(column)


def _convert_or_defer(conv, column):
    deferred = getattr(conv, "deferred", None)
    field = deferred(column) if deferred is not None else None
    return conv(column) if field is None else field


def convert_sample_list(samples, converters, count_error):
    """One batch (a list of fields) from a list of samples; ``count_error(got, expected)`` builds
    the exception for a sample with the wrong number of fields. A field that cannot be converted is a
    TypeError or ValueError naming the variable, the sample, what came and what was expected."""
    return _converted(samples, converters, count_error, _convert_now)


def convert_or_defer(samples, converters, count_error):
    """``convert_sample_list``, except that big dense fields come back as ``DeferredField``s, for a
    writer that can stack them straight into their destination (a worker's shared-memory slot)."""
    return _converted(samples, converters, count_error, _convert_or_defer)


def _feeder_count_error(got, expected):
    return AssertionError("The number of fields in data (%d) does not match len(feed_list) (%d)" % (got, expected))


class DataFeeder:
    """Turns lists of samples into feed dicts ``{name: LoDTensor}`` (fluid's DataFeeder).

    Args:
        feed_list (list): Variables, or their names (looked up in block 0 of ``program``).
        place (Place): where the tensors are put (CPUPlace or CUDAPlace).
        program (Program, default default_main_program()): used to look names up.

    Example:
        feeder = fluid.DataFeeder([img, label], fluid.CPUPlace())
        exe.run(feed=feeder.feed([([0] * 784, [9]), ([1] * 784, [1])]))
    """

    def __init__(self, feed_list, place, program=None):
        specs = slot_specs(feed_list, program if program is not None else default_main_program())
        self.place = place
        self._specs = specs
        self._converters = make_converters(specs)
        self.feed_names = [s.name for s in specs]
        self.feed_shapes = [s.shape for s in specs]
        self.feed_dtypes = [s.dtype.name for s in specs]
        self.feed_lod_level = [s.lod_level for s in specs]

    def feed(self, iterable):
        """``{name: LoDTensor}`` for one list of samples (each sample has one field per variable)."""
        fields = convert_sample_list(iterable, self._converters, _feeder_count_error)
        return {name: _on_place(field, self.place) for name, field in zip(self.feed_names, fields)}

    def feed_parallel(self, iterable, num_places=None):
        """One feed dict per place for a list of ``num_places`` mini-batches (a generator)."""
        places = self._places(num_places)
        batches = list(iterable)
        if len(batches) != len(places):
            raise ValueError("feed_parallel takes multiple mini-batches. Each mini-batch will be feed on each "
                             "device. The number of devices and number of mini-batches must be same.")
        for place, batch in zip(places, batches):
            fields = convert_sample_list(batch, self._converters, _feeder_count_error)
            yield {name: _on_place(f, place) for name, f in zip(self.feed_names, fields)}

    def decorate_reader(self, reader, multi_devices, num_places=None, drop_last=True):
        """A reader of feed dicts (one device) or of lists of per-device feed dicts."""
        def feed_reader():
            if not multi_devices:
                for batch in reader():
                    yield self.feed(batch)
                return
            num = self._num_places(num_places)
            group = []
            for batch in reader():
                group.append(batch)
                if len(group) == num:
                    yield list(self.feed_parallel(group, num))
                    group = []
            if group and not drop_last:
                raise ValueError("The data batch which cannot fit for devices will be dropped is not "
                                 "implementation. Other strategies are not implemented")
        return feed_reader

    # --- places ------------------------------------------------------------------------------
    def _num_places(self, num_places):
        if num_places is not None:
            return int(num_places)
        return len(cuda_places()) if _is_gpu(self.place) else _cpu_num()

    def _places(self, num_places):
        n = self._num_places(num_places)
        if _is_gpu(self.place):
            return [type(self.place)(i) for i in range(n)]
        return [type(self.place)() for _ in range(n)]


def _is_gpu(place):
    return getattr(place, "is_gpu_place", lambda: False)()


def _on_place(field, place):
    """A LoDTensor on ``place`` holding ``field`` (no copy on CPU)."""
    tensor = LoDTensor()
    if isinstance(field, LoDTensor):
        tensor.set(field._array, place)
        tensor._lod = field._lod
    else:
        tensor.set(field, place)
    return tensor
