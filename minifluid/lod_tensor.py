"""LoDTensor: an array plus optional sequence lengths (fluid's level-of-detail info).

The array is held as is (numpy or CuPy); ``np.asarray(t)`` sees it without a copy, ``np.array(t)``
copies it (as in fluid: a snapshot that later in-place parameter updates leave alone). LoD is stored the way users give it, as recursive sequence lengths.
"""
import numpy as np

__all__ = ["FetchedScalar", "LoDTensor", "LoDTensorArray", "create_lod_tensor", "create_random_int_lodtensor",
           "float_friendly",
           "lengths_to_offsets", "offsets_to_lengths"]


def lengths_to_offsets(lengths):
    """[[3, 2, 4]] -> [[0, 3, 5, 9]] (fluid's offset-based ``lod()``)."""
    out = []
    for level in lengths:
        offsets = [0]
        for n in level:
            offsets.append(offsets[-1] + int(n))
        out.append(offsets)
    return out


def offsets_to_lengths(offsets):
    return [[b - a for a, b in zip(level, level[1:])] for level in offsets]


class FetchedScalar(np.ndarray):
    """A one-element array (a loss or a metric: shape [1], as fluid fetches them and as dygraph's
    ``loss.numpy()`` returns them) that still converts with ``float()`` / ``int()``. numpy 2.4 turned
    that into a TypeError for arrays with ndim > 0, and legacy scripts do it all the time
    (``float(loss)``, ``"%f" % metrics[0]``, ``float(avg_loss.numpy())``)."""

    def __float__(self):
        return float(self.item())

    def __int__(self):
        return int(self.item())

    def __reduce__(self):
        """Pickled as the plain ndarray it is (``paddle.save``, ``pickle.dump``): files stay readable
        without minifluid, and by our own restricted unpickler."""
        return self.view(np.ndarray).__reduce__()


def float_friendly(array):
    """``array``, viewed as a ``FetchedScalar`` when it has one element and ndim > 0 (no copy)."""
    return array.view(FetchedScalar) if array.size == 1 and array.ndim else array


class LoDTensor:
    """A dense array with optional recursive sequence lengths."""

    __slots__ = ("_array", "_lod", "_placement")

    def __init__(self, array=None, lod=None, place=None):
        self._array = array
        self._lod = [list(level) for level in lod] if lod else []
        self._placement = place

    # --- data -----------------------------------------------------------------
    def set(self, array, place=None):
        """Store ``array`` (no copy for a C-contiguous ndarray) on ``place``."""
        self._placement = place
        if place is not None and getattr(place, "is_gpu_place", lambda: False)():
            self._array = place.array_module().asarray(array)
        else:
            self._array = np.asarray(array)

    def shape(self):
        return list(self._array.shape) if self._array is not None else []

    _get_dims = shape

    def _dtype(self):
        return self._array.dtype

    def __array__(self, dtype=None, copy=None):
        """numpy's protocol: ``np.array(tensor)`` (copy=True) gives a copy, as in fluid, so it keeps the values
        after later steps update the parameter in place; ``np.asarray(tensor)`` (copy=None) may share memory."""
        arr = self._array
        if hasattr(arr, "get"):  # CuPy array: device -> host (a new array already)
            arr, copy = arr.get(), False
        if dtype is not None and arr.dtype != dtype:
            return arr.astype(dtype)
        return arr.copy() if copy else arr

    # fluid's low-level allocation: _set_dims (below) gives the shape, _alloc_<type> memory of it (zeros here)
    def _alloc(self, dtype, place):
        self.set(np.zeros(self._array.shape if self._array is not None else (0,), dtype), place)

    def _alloc_float(self, place):
        self._alloc(np.float32, place)

    def _alloc_double(self, place):
        self._alloc(np.float64, place)

    def _alloc_int(self, place):
        self._alloc(np.int32, place)

    def _mutable_data(self, place, dtype):
        """Memory of ``dtype`` for the dims set, and its address (fluid returns the raw pointer)."""
        self._alloc(np.dtype(str(dtype)), place)
        return int(np.asarray(self).__array_interface__["data"][0])

    def __getitem__(self, index):
        """A numpy view of part of the data (fluid's Tensor slicing)."""
        return np.asarray(self)[index]

    def _is_initialized(self):
        return self._array is not None

    def _set_dims(self, dims):
        """fluid's resize before ``set``: the next ``set`` brings the data, so only a held array of another
        size is dropped (an empty one of the new shape stands in until then)."""
        dims = tuple(int(d) for d in dims)
        if self._array is None or self._array.shape != dims:
            self._replace(np.zeros(dims, dtype=self._array.dtype if self._array is not None else "float32"))

    def _replace(self, array):
        """Hold ``array`` from now on (a scope tensor also writes it through)."""
        self._array = array

    def _element(self, i):
        return self._array.reshape(-1)[i].item()

    def _set_element(self, i, value):
        """Element ``i`` (row-major) := ``value``, in a new array: the one held may be the caller's (``set`` keeps
        a contiguous ndarray as it is), which fluid's copy-on-set never changes."""
        array = np.array(self._array)
        array.reshape(-1)[i] = value
        self._replace(array)

    _get_float_element = _get_double_element = _element
    _set_float_element = _set_double_element = _set_element

    def _copy(self, place=None):
        """A deep copy (data and LoD) on ``place``."""
        tensor = LoDTensor(None if self._array is None else self._array.copy(), self._lod, place or self._placement)
        return tensor

    def place(self):
        return self._placement

    def _place(self):
        """fluid's ``LoDTensor._place()``: where the data lives (CPUPlace for a numpy array set without one)."""
        if self._placement is not None:
            return self._placement
        from .places import CPUPlace, CUDAPlace  # noqa: PLC0415 - places imports the op registry
        device = getattr(self._array, "device", None)
        return CUDAPlace(device.id) if hasattr(device, "id") else CPUPlace()

    # --- LoD ------------------------------------------------------------------
    def set_recursive_sequence_lengths(self, lengths):
        self._lod = [list(map(int, level)) for level in lengths]

    def recursive_sequence_lengths(self):
        return [list(level) for level in self._lod]

    def set_lod(self, offsets):
        self._lod = offsets_to_lengths(offsets)

    def lod(self):
        return lengths_to_offsets(self._lod)

    def has_valid_recursive_sequence_lengths(self):
        if not self._lod:
            return True
        for upper, lower in zip(self._lod, self._lod[1:]):
            if len(lower) != sum(upper):
                return False
        return self._array is not None and sum(self._lod[-1]) == self._array.shape[0]

    def __len__(self):
        return 0 if self._array is None else len(self._array)

    def __repr__(self):
        lod = f", lod={self._lod}" if self._lod else ""
        return f"LoDTensor(shape={self.shape()}, dtype={getattr(self._array, 'dtype', None)}{lod})"


def create_lod_tensor(data, recursive_seq_lens, place):
    """Build a LoDTensor from an ndarray, a LoDTensor, or a nested list of sequences.

    A nested list ``[[1, 2, 3], [4, 5]]`` with lengths ``[[3, 2]]`` becomes a [5, 1] tensor.
    """
    if isinstance(data, LoDTensor):
        data = np.asarray(data)
    if isinstance(data, list):
        flat = [x for seq in data for x in seq]
        lengths = [len(seq) for seq in data]
        if [lengths] != [list(level) for level in recursive_seq_lens[-1:]]:
            raise ValueError(
                f"The provided recursive_sequence_lengths info is invalid: data lengths {lengths} "
                f"do not match {recursive_seq_lens}")
        data = np.asarray(flat).reshape(len(flat), -1)
        if data.dtype == np.float64:
            data = data.astype(np.float32)
    tensor = LoDTensor()
    tensor.set(data, place)
    tensor.set_recursive_sequence_lengths(recursive_seq_lens)
    if not tensor.has_valid_recursive_sequence_lengths():
        raise ValueError(
            f"The provided recursive_sequence_lengths info is invalid: {recursive_seq_lens} "
            f"for data of shape {tensor.shape()}")
    return tensor


def create_random_int_lodtensor(recursive_seq_lens, base_shape, place, low, high):
    """A LoDTensor of int64 values drawn uniformly from [low, high] (both included), of shape
    ``[sum(recursive_seq_lens[-1])] + base_shape``, with those sequence lengths."""
    assert isinstance(base_shape, list), "base_shape should be a list"
    shape = [sum(recursive_seq_lens[-1])] + base_shape
    return create_lod_tensor(np.random.randint(low, high + 1, shape).astype("int64"), recursive_seq_lens, place)


class LoDTensorArray(list):
    """fluid's LoDTensorArray: a list of LoDTensors, e.g. one batch that external code pushes into a
    loader's queue (``loader.queue.push(array)``), or the array a scope variable holds when code fills it
    (``scope.var(name).get_lod_tensor_array().append(t)``): the array ops then read and write it through
    ``entry`` / ``put``, as they do their own arrays (NOTE [ Tensor array values ] in ops/tensor_array.py)."""

    def entry(self, i, name="array"):
        """Entry ``i`` as the array ops take it: (array, recursive sequence lengths)."""
        if i >= len(self) or self[i] is None or self[i]._array is None:
            raise IndexError(f"Tensor array {name!r} has no element {i}: it holds {len(self)} element(s)")
        return self[i]._array, self[i].recursive_sequence_lengths()

    def put(self, i, value, lod):
        """Write entry ``i`` (array and recursive sequence lengths), growing the array with empty entries."""
        if i >= len(self):
            self.extend(LoDTensor() for _ in range(i + 1 - len(self)))
        self[i] = LoDTensor(value, lod)
