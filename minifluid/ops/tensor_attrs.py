"""List and scalar attributes a Variable may give, read by the kernel at run time.

fluid 1.8 lets a layer take some attributes (shapes, axes, slice bounds, expand times, a fill value) as
Variables: the op then has an extra int32 input that replaces the attribute when present, in one of two
forms: ``<Name>Tensor`` (one 1-D tensor holding the whole list) or ``<Name>TensorList`` (one ``[1]``
tensor per entry). Kernels read the value with ``int_list`` / ``scalar``; shape inference sees only the
inputs' metadata, so it reports -1 wherever such a value decides a dimension (``known_list``).
layers/tensor_attrs.py builds these inputs the way fluid's layers do.
"""
__all__ = ["int_list", "known_list", "scalar"]


def _first(t):
    return t.reshape(-1)[0].item()


def int_list(attr, tensor=None, tensors=None):
    """The list at run time: the whole-list tensor, else the per-entry tensors, else the attribute."""
    if tensor is not None:
        return [int(v) for v in tensor.reshape(-1).tolist()]
    if tensors:
        return [int(_first(t)) for t in tensors]
    return list(attr)


def scalar(attr, tensor=None):
    """A scalar attribute at run time: the one value of ``tensor`` when given, else the attribute."""
    return attr if tensor is None else _first(tensor)


def known_list(attr, tensor=None, tensors=None, what="list"):
    """The list as far as it is known when the program is built: the attribute when no tensor replaces it;
    ``[-1] * n`` when a whole-list tensor of known length n does; the attribute's entries (fluid's layers
    write -1 where a Variable gives an entry) when per-entry tensors do. A whole-list tensor of unknown
    length gives None."""
    if tensor is not None:
        n = tensor.shape[0] if len(tensor.shape) == 1 else (1 if len(tensor.shape) == 0 else -1)
        if len(tensor.shape) > 1:
            raise ValueError(f"The {what} tensor must be 1-D, but received shape {list(tensor.shape)}")
        return None if n < 0 else [-1] * n
    if tensors:
        return list(attr) if len(attr) == len(tensors) else [-1] * len(tensors)
    return list(attr)
