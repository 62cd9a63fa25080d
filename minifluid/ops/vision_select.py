"""Vision ops that select positions: similarity_focus's masks and random_crop's windows (neither has a gradient,
as in fluid).

similarity_focus takes, for every image and every channel named in ``indexes`` along ``axis``, the plane of the
two other axes and greedily marks its largest entries whose row and column are both still free (min(rows, cols)
of them): the order fluid's sort-and-skip walk visits them. The marks of all indexes are united and spread along
``axis``. The greedy walk is sequential in the number of marks but runs on every image and index at once.
random_crop cuts, from each instance (the trailing ``len(shape)`` axes; the leading ones are the batch), a window
of ``shape`` at offsets drawn uniformly from a generator seeded by the Seed input, and writes the next seed to
SeedOut, so each run crops elsewhere and a run's crops follow from the seed it started with.
"""
import numpy as np

from .registry import array_module, register_op


# --- similarity_focus: [N, A, B, C] -> a 0/1 mask of the same shape -----------------------------------------------
def _sf_check(attrs, shape):
    if len(shape) != 4:
        raise ValueError(f"The dimension size of Input(X) be 4, but received {len(shape)}.")
    axis, indexes = attrs["axis"], attrs["indexes"]
    if axis not in (1, 2, 3):
        raise ValueError(f"The value of Attr(axis) must be 1 or 2 or 3, but received {axis}.")
    if not indexes:
        raise ValueError("The length of Attr(indexes) must be greater than 0, but received 0.")
    for i, index in enumerate(indexes):
        if shape[axis] >= 0 and not 0 <= index < shape[axis]:
            raise ValueError(f"Each value of Attr(indexes) must be less than X.dim[axis], but indexes[{i}] received "
                             f"{index}.")


@register_op("similarity_focus", inputs=("X",), outputs=("Out",), attrs={"axis": 1, "indexes": []},
             infer_shape=lambda attrs, x: (_sf_check(attrs, x.shape), (x.shape, x.dtype))[1], no_gradient=True)
def _similarity_focus_forward(attrs, x):
    _sf_check(attrs, x.shape)
    xp = array_module(x)
    moved = xp.moveaxis(x, attrs["axis"], 1)  # [N, D, P, Q]
    n, d, p, q = moved.shape
    planes = moved[:, list(attrs["indexes"])].reshape(n, -1, p * q).astype(np.float64)  # [N, I, P * Q]
    free = xp.ones(planes.shape, dtype=bool)
    marks = xp.zeros(planes.shape, dtype=bool)
    rows, cols = xp.arange(p * q) // q, xp.arange(p * q) % q
    for _ in range(min(p, q)):  # one mark per plane per step: the largest entry of a free row and column
        best = xp.where(free, planes, -np.inf).argmax(axis=-1)[..., None]
        xp.put_along_axis(marks, best, True, axis=-1)
        free &= (rows != rows[best]) & (cols != cols[best])
    mask = marks.any(axis=1).reshape(n, 1, p, q)
    out = xp.broadcast_to(mask, (n, d, p, q)).astype(x.dtype)
    return xp.ascontiguousarray(xp.moveaxis(out, 1, attrs["axis"]))


# --- random_crop: [*batch, *instance] -> [*batch, *shape] ----------------------------------------------------------
def _crop_infer(attrs, x, seed):
    shape, dims = list(attrs["shape"]), list(x.shape)
    if len(dims) <= len(shape):
        raise ValueError(f"The dimensions of Input(X) must be greater than the length of Attr(shape),But received "
                         f"dimensions of Input(X) is [{len(dims)}], receivecd length of Attr(shape) is [{len(shape)}].")
    lead = len(dims) - len(shape)
    for i, (have, want) in enumerate(zip(dims[lead:], shape)):
        if have >= 0 and have < want:
            raise ValueError(f"The dimensions of Input(X) must be larger than Attr(shape),But received dimensions of "
                             f"Input(X) is [{have}], received Attr(shape)[{i}] is [{want}].")
    return (tuple(dims[:lead] + shape), x.dtype), ((1,), "int64")


@register_op("random_crop", inputs=("X", "Seed"), outputs=("Out", "SeedOut"), attrs={"shape": [], "startup_seed": 0},
             infer_shape=_crop_infer, no_gradient=True)
def _random_crop_forward(attrs, x, seed):
    _crop_infer(attrs, x, seed)
    start = attrs["startup_seed"] if seed is None or seed.size == 0 else int(seed.reshape(-1)[0])
    rng = np.random.RandomState(start % (1 << 32))
    shape = list(attrs["shape"])
    lead = x.ndim - len(shape)
    inst = x.reshape((-1,) + x.shape[lead:])  # [B, *instance]
    b, k = inst.shape[0], len(shape)
    offsets = rng.randint(0, np.array(inst.shape[1:]) - shape + 1, size=(b, k))
    index = [np.arange(b).reshape((b,) + (1,) * k)]
    for i, size in enumerate(shape):  # per instance, its window's coordinates along axis i
        view = [b] + [1] * k
        view[i + 1] = size
        index.append((offsets[:, i, None] + np.arange(size)).reshape(view))
    out = inst[tuple(index)].reshape(x.shape[:lead] + tuple(shape))
    return out, np.array([rng.randint(1, 1 << 31)], dtype=np.int64)
