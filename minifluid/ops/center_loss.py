"""center_loss: half the squared distance of each feature to its class centre, with fluid's centre update.

Loss [N, 1] is ``|x_i - c_{label_i}|^2 / 2``; SampleCenterDiff keeps ``x_i - c_{label_i}`` for the gradient
(``dX = dLoss * diff``; the centres get none). With ``need_update`` the op also moves each centre towards its
samples, ``c_k += alpha * sum_{label_i = k}(x_i - c_k) / (1 + n_k)`` (n_k samples of class k in the batch, alpha
the CenterUpdateRate input), writing CentersOut, which the layer makes the Centers variable itself.
"""
import numpy as np

from .registry import array_module, register_grad, register_op


def _center_loss_infer(attrs, x, label, centers, rate):
    if len(x.shape) != 2:
        raise ValueError(f"Input(X) of center_loss should be a 2-D tensor [batch_size, feature_dim], but received "
                         f"shape {list(x.shape)}")
    if len(label.shape) not in (1, 2) or len(label.shape) == 2 and label.shape[1] not in (-1, 1):
        raise ValueError(f"Input(Label) of center_loss should be [batch_size] or [batch_size, 1], but received shape "
                         f"{list(label.shape)}")
    return (x.shape, x.dtype), ((x.shape[0], 1), x.dtype), (centers.shape, centers.dtype)


@register_op("center_loss", inputs=("X", "Label", "Centers", "CenterUpdateRate"),
             outputs=("SampleCenterDiff", "Loss", "CentersOut"), attrs={"cluster_num": 0, "need_update": False},
             infer_shape=_center_loss_infer, no_grad_inputs=("Label", "Centers", "CenterUpdateRate"))
def _center_loss_forward(attrs, x, label, centers, rate):
    _center_loss_infer(attrs, x, label, centers, rate)
    xp = array_module(x)
    ids = label.reshape(-1).astype(np.int64)
    if ids.size and (ids.min() < 0 or ids.max() >= centers.shape[0]):
        raise ValueError(f"Input(Label) of center_loss holds class ids in [0, {centers.shape[0]}), but received "
                         f"{int(ids.min() if ids.min() < 0 else ids.max())}")
    diff = x - centers[ids]
    loss = (diff * diff).sum(axis=1, keepdims=True) / 2
    new_centers = centers.copy()
    if attrs["need_update"]:
        total = xp.zeros_like(centers)
        xp.add.at(total, ids, diff)
        count = 1 + xp.bincount(ids, minlength=centers.shape[0])
        new_centers += float(rate.reshape(-1)[0]) * total / count[:, None]
    return diff.astype(x.dtype, copy=False), loss.astype(x.dtype, copy=False), new_centers


@register_grad("center_loss", reads=("SampleCenterDiff",))
def _center_loss_backward(attrs, ins, outs, douts, need):
    diff, dloss = outs[0], douts[1]
    return (dloss * diff if dloss is not None else None), None, None, None
