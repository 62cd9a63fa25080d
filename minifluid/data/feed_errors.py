"""What the user is told when samples or batches cannot be turned into the feed variables' tensors.

Conversion runs numpy over whole columns of samples (``feeder.py``); only when that fails do the
functions here walk the samples, once, to find the first one at fault and say what came, where
(feed variable, sample position) and what was expected, instead of numpy's "inhomogeneous shape".
The messages serve ``DataFeeder.feed`` directly and the loaders through ``ConversionFailed``
(``minifluid.errors``), which the consumer turns into a ``FeedConversionError``.
"""
import numpy as np

from ..lod_tensor import LoDTensor

__all__ = ["describe_value", "sample_error", "column_error", "batch_field_error", "RAGGED_BATCH_MESSAGE"]

RAGGED_BATCH_MESSAGE = (
    "\n\tFaild to convert input data to a regular ndarray :\n\t* Usually this means the input data contains "
    "nested lists with different lengths. \n\t* Check the reader function passed to 'set_batch_generator' "
    "to locate the data causes this issue.\n\t* Please consider using 'fluid.create_lod_tensor' to convert "
    "it to a LoD-Tensor.")


def describe_value(value):
    """What came, in a few words: None, a dict and its keys, a str, a ragged list, an array's shape."""
    if value is None:
        return "None"
    if isinstance(value, dict):
        return f"a dict with keys {list(value)[:8]}"
    if isinstance(value, (str, bytes)):
        text = value if len(value) <= 20 else value[:17] + "..."
        return f"a {type(value).__name__} {text!r}"
    if isinstance(value, LoDTensor):
        return f"a LoDTensor of shape {tuple(np.shape(value._array))}"
    try:
        arr = np.asarray(value)
    except ValueError:
        return f"a ragged nested {type(value).__name__} (its rows differ in length)"
    if arr.dtype.hasobject:
        kinds = sorted({type(v).__name__ for v in arr.ravel()[:50]})
        return f"a {type(value).__name__} holding {', '.join(kinds)} objects (shape {arr.shape})"
    kind = "an ndarray" if isinstance(value, np.ndarray) else f"a {type(value).__name__}"
    return f"{kind} of {arr.dtype} with shape {arr.shape}"


def _declared(spec):
    shape = "None" if spec.shape is None else list(spec.shape)
    return f"variable '{spec.name}' (shape {shape}, {spec.dtype.name}, lod_level {spec.lod_level})"


def _per_sample(spec):
    """The declared shape without its batch dimension, when that is well defined."""
    if spec.shape is None or len(spec.shape) < 1 or spec.shape[0] >= 0 or spec.lod_level:
        return "the same shape in every sample"
    return f"shape [{', '.join('any' if d < 0 else str(d) for d in spec.shape[1:])}] in every sample"


def sample_error(samples, names):
    """A TypeError for the first sample that is not a list or tuple of fields, or None."""
    for i, sample in enumerate(samples):
        if not isinstance(sample, (list, tuple)):
            return TypeError(
                f"sample {i} of the batch (counting from 0) is {describe_value(sample)}; expected a tuple or list "
                f"of {len(names)} field(s), one per feed variable in feed_list order: {names}")
    return None


def column_error(spec, column, cause):
    """The error for a column of samples that numpy could not turn into ``spec``'s batch field: which
    sample, what it was, what was expected. Falls back to ``cause``'s text when no sample stands out."""
    expected = f"numbers convertible to {spec.dtype.name}, {_per_sample(spec)}"
    if spec.lod_level:
        expected = (f"a nested list {spec.lod_level} level(s) deep (lod_level {spec.lod_level}) whose innermost "
                    f"items are numbers convertible to {spec.dtype.name}")
    first_shape = None
    for i, item in enumerate(column):
        problem, error_cls = _item_problem(item, spec)
        if problem is None and not spec.lod_level:
            shape = np.shape(item)
            if first_shape is None:
                first_shape = (i, shape)
            elif shape != first_shape[1]:
                problem, error_cls = (f"of shape {shape} while sample {first_shape[0]} has shape {first_shape[1]}",
                                      ValueError)
        if problem is not None:
            return error_cls(f"Cannot feed {_declared(spec)}: sample {i} of the batch (counting from 0) is "
                             f"{problem}; expected {expected}. (numpy: {cause})")
    return type(cause)(f"Cannot feed {_declared(spec)}: {cause}") if isinstance(cause, (TypeError, ValueError)) \
        else cause


def _item_problem(item, spec):
    """(what is wrong with one sample field, the error class), or (None, None)."""
    if item is None or isinstance(item, (dict, str, bytes)):
        return describe_value(item), TypeError
    if spec.lod_level:
        return None, None
    try:
        arr = np.asarray(item)
    except ValueError:
        return describe_value(item), ValueError
    if arr.dtype.hasobject or arr.dtype.kind in "USV":
        return describe_value(item), TypeError
    try:
        arr.astype(spec.dtype, casting="unsafe")
    except (TypeError, ValueError) as e:
        return f"{describe_value(item)}, which cannot be converted to {spec.dtype.name} ({e})", TypeError
    return None, None


def batch_field_error(index, name, field, batch_index, ragged):
    """The TypeError for field ``index`` of a ``set_batch_generator`` batch that is None or not an array."""
    where = "a batch field" if index is None else \
        f"field {index}" + (f" (feed variable '{name}')" if name else "") + f" of batch {batch_index} (counting from 0)"
    if ragged:
        return TypeError(f"{where} is {describe_value(field)}." + RAGGED_BATCH_MESSAGE)
    return TypeError(f"{where} is {describe_value(field)}; expected an ndarray, a LoDTensor or a nested list of "
                     "numbers")
