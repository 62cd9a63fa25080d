"""Saving and loading state dicts as numpy: ``fluid.dygraph.save_dygraph`` / ``load_dygraph`` and
``paddle.save`` / ``paddle.load``.

A state dict (name -> Tensor or ndarray, or nested dicts of those) is written with ``pickle`` after
every tensor is turned into a numpy array, so a file holds only dicts, lists, numbers, strings
and ndarrays and can be read without minifluid (``pickle.load``) or loaded back into a Layer
with ``set_dict``.
"""
import os
import pickle

from .tensor import ParamBase, Tensor

__all__ = ["load", "load_dygraph", "save", "save_dygraph"]


def _to_numpy(obj):
    if isinstance(obj, dict):
        return type(obj)((k, _to_numpy(v)) for k, v in obj.items())
    if isinstance(obj, (list, tuple)):
        return type(obj)(_to_numpy(v) for v in obj)
    if isinstance(obj, Tensor):
        return obj.numpy()
    return obj


def save(obj, path, protocol=4):
    """paddle.save: ``obj`` (a state dict, or nested containers of tensors) to ``path`` as numpy."""
    dirname = os.path.dirname(path)
    if dirname:
        os.makedirs(dirname, exist_ok=True)
    with open(path, "wb") as f:
        pickle.dump(_to_numpy(obj), f, protocol=protocol)


def load(path, **_configs):
    """paddle.load: what ``save`` wrote (tensors come back as numpy arrays, which ``set_dict`` takes)."""
    with open(path, "rb") as f:
        return pickle.load(f)


def save_dygraph(state_dict, model_path):
    """fluid 1.8: a Layer's state dict to ``model_path + '.pdparams'``; one without parameters (an
    optimizer's) to ``.pdopt``."""
    assert len(state_dict) > 0, "state_dict is empty, no need to save"
    has_params = any(isinstance(v, ParamBase) for v in state_dict.values())
    save(state_dict, model_path + (".pdparams" if has_params else ".pdopt"))


def load_dygraph(model_path, keep_name_table=False):
    """fluid 1.8: ``(param_dict, optimizer_dict)`` from ``model_path`` (.pdparams / .pdopt; None if absent)."""
    base = model_path[:-len(".pdparams")] if model_path.endswith(".pdparams") else model_path
    found = [load(base + ext) if os.path.exists(base + ext) else None for ext in (".pdparams", ".pdopt")]
    if found == [None, None]:
        raise ValueError(f"Model saved directory '{model_path}' is not exists.")
    return tuple(found)
