"""shuffle_batch (fluid.contrib.layers): the rows of X (every dimension but the last flattened) in a random
order drawn from the seed in Seed (else the ``startup_seed`` attr); SeedOut is the next seed, so a program
writing it back into Seed draws a new order each run. ShuffleIdx: the source row of each output row."""
import numpy as np

from .registry import register_grad, register_op


def _infer(attrs, x, seed):
    rows = -1 if any(d < 0 for d in x.shape[:-1]) else int(np.prod(x.shape[:-1]))
    return (x.shape, x.dtype), ((rows,), "int64"), ((1,), "int64")


@register_op("shuffle_batch", inputs=("X", "Seed"), outputs=("Out", "ShuffleIdx", "SeedOut"), optional=("Seed",),
             no_grad_inputs=("Seed",), attrs={"startup_seed": 0}, infer_shape=_infer, share_lod={"Out": "X"})
def _shuffle_batch_forward(attrs, x, seed):
    start = int(np.asarray(seed).reshape(-1)[0]) if seed is not None and np.size(seed) else attrs["startup_seed"]
    rng = np.random.RandomState(start & 0xFFFFFFFF)
    rows = x.reshape(-1, x.shape[-1]) if x.ndim > 1 else x.reshape(-1, 1)
    order = rng.permutation(rows.shape[0]).astype(np.int64)
    next_seed = np.array([rng.randint(0, 2 ** 31 - 1)], np.int64)
    return rows[order].reshape(x.shape), order, next_seed


@register_grad("shuffle_batch")
def _shuffle_batch_backward(attrs, ins, outs, douts, need):
    (x, _), (_, order, _), dout = ins, outs, douts[0]
    rows = dout.reshape(order.size, -1)
    dx = np.empty_like(rows)
    dx[order] = rows
    return dx.reshape(x.shape), None
