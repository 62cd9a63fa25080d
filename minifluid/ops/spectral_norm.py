"""spectral_norm: a weight divided by its largest singular value, estimated by power iteration.

The weight is viewed as the matrix W [h, w] whose rows run along axis ``dim`` (0 or 1) and whose columns are
every other axis flattened. Starting from the U [h] and V [w] inputs (parameters the layer creates), each of
``power_iters`` rounds sets ``v = W^T u / (|W^T u| + eps)`` then ``u = W v / (|W v| + eps)``; sigma is
``u^T W v`` and the output ``W / sigma``. As in fluid, U and V are read and never written back, so every run
starts from the same vectors. The gradient holds u and v fixed: ``dW = (dOut - (sum(dOut * W) / sigma) u v^T)
/ sigma``, the exact derivative when ``power_iters`` is 0 (PyTorch's rule; fluid 1.8's kernel multiplied the
upstream gradient into the rank-one term elementwise).
"""
import numpy as np

from .registry import array_module, register_grad, register_op


def _check(attrs, w_shape, u_shape, v_shape):
    rank, dim, iters = len(w_shape), attrs["dim"], attrs["power_iters"]
    if rank < 2:
        raise ValueError(f"The rank of Input(Weights) should be greater equal than 2, but received Weight rank({rank})")
    if rank > 5:
        raise ValueError(f"The rank of Input(Weights) should be less equal than 5, but received Weight rank({rank})")
    if dim not in (0, 1):
        raise ValueError(f"Attr(dim) can only be 0 or 1, but received {dim}")
    if iters < 0:
        raise ValueError(f"Attr(power_iters) should be greater equal then 0, but received {iters}")
    h = w_shape[dim]
    w = int(np.prod([d for i, d in enumerate(w_shape) if i != dim]))
    if h > 0 and u_shape[0] > 0 and u_shape[0] != h:
        raise ValueError(f"Input(U) dimension[0] should be equal to Input(Weight) dimension[Attr(dim)], but received "
                         f"U dimension[0]({u_shape[0]}) != Weight dimension[{dim}]({h})")
    if w > 0 and v_shape[0] > 0 and v_shape[0] != w:
        raise ValueError(f"Input(V) dimension[0] should be equal to the product of Input(Weight) dimension except "
                         f"dimension[Attr(dim)], but received V dimension[0]({v_shape[0]}) != product of Input(Weight) "
                         f"dimension({w})")


def _matrix(weight, dim):
    """W as [h, w]: axis ``dim`` first, the rest flattened."""
    return array_module(weight).moveaxis(weight, dim, 0).reshape(weight.shape[dim], -1)


def _unmatrix(mat, weight_shape, dim):
    moved = (weight_shape[dim],) + tuple(d for i, d in enumerate(weight_shape) if i != dim)
    return array_module(mat).moveaxis(mat.reshape(moved), 0, dim)


def _power_iteration(attrs, mat, u, v):
    """(u, v, sigma) after ``power_iters`` rounds from the inputs U and V."""
    xp = array_module(mat)
    eps = attrs["eps"]
    for _ in range(attrs["power_iters"]):
        v = mat.T @ u
        v = v / (xp.sqrt((v * v).sum()) + eps)
        u = mat @ v
        u = u / (xp.sqrt((u * u).sum()) + eps)
    return u, v, u @ (mat @ v)


@register_op("spectral_norm", inputs=("Weight", "U", "V"), outputs=("Out",),
             attrs={"dim": 0, "power_iters": 1, "eps": 1e-12}, no_grad_inputs=("U", "V"),
             infer_shape=lambda attrs, w, u, v: (_check(attrs, w.shape, u.shape, v.shape), (w.shape, w.dtype))[1],
             share_lod={"Out": "Weight"})
def _spectral_norm_forward(attrs, weight, u, v):
    _check(attrs, weight.shape, u.shape, v.shape)
    mat = _matrix(weight, attrs["dim"])
    _, _, sigma = _power_iteration(attrs, mat, u.astype(weight.dtype), v.astype(weight.dtype))
    return (weight / sigma).astype(weight.dtype, copy=False)


@register_grad("spectral_norm", reads=("Weight", "U", "V"))
def _spectral_norm_backward(attrs, ins, outs, douts, need):
    weight, u, v = ins
    dim = attrs["dim"]
    mat, dmat = _matrix(weight, dim), _matrix(douts[0], dim)
    u, v, sigma = _power_iteration(attrs, mat, u.astype(weight.dtype), v.astype(weight.dtype))
    proj = (dmat * mat).sum() / sigma
    dw = (dmat - proj * (u[:, None] * v[None, :])) / sigma
    return _unmatrix(dw, weight.shape, dim).astype(weight.dtype, copy=False), None, None
