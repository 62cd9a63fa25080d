"""gather_tree: backtrack the beams of a beam search (BeamSearchDecoder.finalize, layers/decode.py).

``Ids`` [max_time, batch, beam] holds each step's chosen token per beam and ``Parents`` (same shape) the
beam of the step before that each choice extends. The last step's beams are the finished hypotheses;
walking ``Parents`` back from them gives each hypothesis' token at every earlier step. The walk is one
gather per time step over every (batch, beam) at once; the loop over steps is the recursion itself.
"""
import numpy as np

from .registry import register_op

__all__ = []


def _infer_gather_tree(attrs, ids, parents):
    if ids.shape is not None and parents.shape is not None and tuple(ids.shape) != tuple(parents.shape):
        raise ValueError(f"gather_tree: the shape of Input(Parents) {list(parents.shape)} must be same with the "
                         f"shape of Input(Ids) {list(ids.shape)}.")
    return ids.shape, ids.dtype


@register_op("gather_tree", inputs=("Ids", "Parents"), outputs=("Out",), infer_shape=_infer_gather_tree,
             no_gradient=True)
def _gather_tree_forward(attrs, ids, parents):
    if ids.shape != parents.shape:
        raise ValueError(f"gather_tree: the shape of Input(Parents) {list(parents.shape)} must be same with the "
                         f"shape of Input(Ids) {list(ids.shape)}.")
    if ids.ndim != 3:
        raise ValueError(f"gather_tree: Input(Ids) must be [max_time, batch_size, beam_size], got shape "
                         f"{list(ids.shape)}")
    out = np.empty_like(ids)
    steps, _, beam = ids.shape
    if steps == 0:
        return out
    out[-1] = ids[-1]
    parent = parents[-1].astype(np.int64)
    for t in range(steps - 2, -1, -1):
        if parent.size and (parent.min() < 0 or parent.max() >= beam):
            raise IndexError(f"gather_tree: Input(Parents) at step {t + 1} holds beam index "
                             f"{int(parent.min() if parent.min() < 0 else parent.max())} outside [0, {beam})")
        out[t] = np.take_along_axis(ids[t], parent, axis=1)
        parent = np.take_along_axis(parents[t], parent, axis=1).astype(np.int64)
    return out
