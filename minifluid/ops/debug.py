"""The ``print`` op behind ``fluid.layers.Print``: prints a tensor when the program runs (its value in
forward, its gradient in backward, as ``print_phase`` says) and passes it on unchanged."""
import sys

import numpy as np

from .registry import register_grad, register_op, same_as

_printed = {}  # (id of one op's attrs, phase) -> times printed, for ``first_n`` (per op, per phase)


def _print(attrs, value, phase):
    if attrs["print_phase"] not in (phase, "both"):
        return
    key = (id(attrs), phase)
    count = _printed.get(key, 0)
    if 0 <= attrs["first_n"] <= count:
        return
    _printed[key] = count + 1
    array = np.asarray(value)
    lines = [f"{attrs['message']} Variable: {attrs['var_name']}{'@GRAD' if phase == 'backward' else ''}".strip()]
    if attrs["print_tensor_shape"]:
        lines.append(f"  - shape: {list(array.shape)}")
    if attrs["print_tensor_type"]:
        lines.append(f"  - dtype: {array.dtype}")
    flat = array.reshape(-1)
    shown = flat if attrs["summarize"] < 0 else flat[:attrs["summarize"]]
    lines.append(f"  - data: {' '.join(str(v) for v in shown.tolist())}{' ...' if shown.size < flat.size else ''}")
    print("\n".join(lines), file=sys.stdout, flush=True)


@register_op("print", inputs=("In",), outputs=("Out",), infer_shape=same_as(0), share_lod={"Out": "In"},
             attrs={"first_n": -1, "message": "", "summarize": 20, "print_tensor_name": True,
                    "print_tensor_type": True, "print_tensor_shape": True, "print_tensor_lod": True,
                    "print_phase": "both", "var_name": ""})
def _print_forward(attrs, x):
    _print(attrs, x, "forward")
    return x


@register_grad("print")
def _print_backward(attrs, ins, outs, douts, need):
    _print(attrs, douts[0], "backward")
    return (douts[0],)
