"""State dicts on disk in Paddle's formats: ``paddle.save`` / ``paddle.load`` and fluid 1.8's
``save_dygraph`` / ``load_dygraph``.

What Paddle writes, minifluid writes: a state dict (name -> Tensor or ndarray) is pickled as
``{name: ndarray}`` plus Paddle's ``"StructuredToParameterName@@"`` table (structured name -> parameter
name); any other object has each Tensor pickled as the tuple ``(name, ndarray)``, as Paddle's
``paddle.save`` does; a Program is its ProgramDesc bytes. Reading never unpickles freely: pickles go
through ``io_format.safe_pickle`` (arrays, numbers, strings, containers; a crafted file cannot run
code). Loaded tensors come back as numpy arrays, which ``set_dict`` / ``set_state_dict`` take.
"""
import io
import os
import pickle

import numpy as np

from ..executor.scope import global_scope
from ..framework.program import Program
from ..framework.program_desc import serialize_program
from ..io_format import safe_pickle
from ..io_format.tensor_file import ModelFormatError, read_tensor
from ..program_state import pack_loaded_dict, unpack_saved_dict
from ..framework.variable import Parameter, Variable
from .tensor import Tensor

__all__ = ["load", "load_dygraph", "save", "save_dygraph"]

NAME_TABLE = "StructuredToParameterName@@"


def _check_protocol(protocol):
    if not isinstance(protocol, int):
        raise ValueError(f"The 'protocol' MUST be `int`, but received {type(protocol)}")
    if not 1 < protocol < 5:
        raise ValueError(f"Expected 1<'protocol'<5, but received protocol={protocol}")


def _is_state_dict(obj):
    return isinstance(obj, dict) and all(isinstance(v, (Tensor, dict)) for v in obj.values())


def _static_value(var):
    """The global scope's value of a static layer's variable (its state dict holds Parameters)."""
    value = global_scope().find_value(var.name)
    if value is None:
        raise ValueError(f"save_dygraph: the static variable {var.name!r} has no value in the global scope; run "
                         "the startup program first")
    return np.array(value)


def _state_dict_to_save(state_dict):
    saved, names = {}, {}
    for key, value in state_dict.items():
        if isinstance(value, Tensor):
            saved[key], names[key] = value.numpy(), value.name
        elif isinstance(value, Variable):
            saved[key], names[key] = _static_value(value), value.name
        else:
            saved[key] = value
    saved[NAME_TABLE] = names
    return saved


def _tensors_as_tuples(obj):
    if isinstance(obj, Tensor):
        return (obj.name, obj.numpy())
    if isinstance(obj, dict):
        return type(obj)((k, _tensors_as_tuples(v)) for k, v in obj.items())
    if isinstance(obj, (list, tuple)):
        return type(obj)(_tensors_as_tuples(v) for v in obj)
    return obj


def _write(path, data_or_obj, protocol=None):
    dirname = os.path.dirname(path)
    if dirname:
        os.makedirs(dirname, exist_ok=True)
    with open(path, "wb") as f:
        if protocol is None:
            f.write(data_or_obj)
        else:
            pickle.dump(data_or_obj, f, protocol=protocol)


def save(obj, path, protocol=4, **configs):
    """paddle.save: a state dict, a Program, or nested containers of Tensors / arrays, in Paddle's format."""
    _check_protocol(protocol)
    if isinstance(path, str) and not os.path.basename(path):
        raise ValueError("The input path MUST be format of dirname/filename [dirname\\filename in Windows system], "
                         "but received filename is empty string.")
    if isinstance(obj, Program):
        _write(path, serialize_program(obj))
    elif _is_state_dict(obj):
        _write(path, unpack_saved_dict(_state_dict_to_save(obj), protocol), protocol)
    else:
        _write(path, _tensors_as_tuples(obj), protocol)


def _from_tuples(obj):
    """Paddle's ``(name, ndarray)`` tensor tuples (and everything else) as numpy arrays."""
    if isinstance(obj, tuple) and len(obj) == 2 and isinstance(obj[0], str) and isinstance(obj[1], np.ndarray):
        return obj[1]
    if isinstance(obj, dict):
        return type(obj)((k, _from_tuples(v)) for k, v in obj.items())
    if isinstance(obj, (list, tuple)):
        return type(obj)(_from_tuples(v) for v in obj)
    return obj


def _load_binary(path, data):
    """A file that is no pickle: one LoDTensor (``use_binary_format=True``) or a ProgramDesc."""
    try:
        array, _ = read_tensor(io.BytesIO(data), path, os.path.basename(path))
        return array
    except ModelFormatError:
        pass
    try:
        return Program.parse_from_string(data)
    except ValueError:
        raise ValueError(f"`paddle.load` can not parse the file:{path}.") from None


def load(path, **configs):
    """paddle.load: what ``paddle.save`` / ``fluid.save`` / Paddle wrote; tensors come back as numpy arrays.

    ``keep_name_table=True`` keeps a state dict's ``"StructuredToParameterName@@"`` entry.
    """
    with open(path, "rb") as f:
        data = f.read()
    if not safe_pickle.is_pickle(data[:2]):
        return _load_binary(path, data)
    result = safe_pickle.loads(data, path)
    if isinstance(result, dict):
        result = pack_loaded_dict(result)
        if NAME_TABLE in result and not configs.get("keep_name_table", False):
            del result[NAME_TABLE]
    return _from_tuples(result)


def save_dygraph(state_dict, model_path):
    """fluid 1.8: a Layer's state dict to ``model_path + '.pdparams'`` (an optimizer's, without
    parameters, to ``.pdopt``): pickle protocol 2 with the name table, as fluid wrote them. A static
    layer's parameters are saved with their values in the global scope."""
    if not os.path.basename(model_path):
        raise ValueError("The input model_path MUST be format of dirname/filename [dirname\\filename in Windows "
                         "system], but received filename is empty string.")
    assert len(state_dict) > 0, "state_dict is empty, no need to save"
    first = next(iter(state_dict.values()))
    suffix = ".pdparams" if isinstance(first, Parameter) else ".pdopt"
    _write(model_path + suffix, _state_dict_to_save(state_dict), 2)


def load_dygraph(model_path, keep_name_table=False):
    """fluid 1.8: ``(param_dict, optimizer_dict)`` from ``model_path`` (.pdparams / .pdopt; None if absent)."""
    base = model_path
    for suffix in (".pdparams", ".pdopt"):
        if base.endswith(suffix):
            base = base[:-len(suffix)]
    found = [load(base + ext, keep_name_table=keep_name_table) if os.path.exists(base + ext) else None
             for ext in (".pdparams", ".pdopt")]
    if found == [None, None]:
        raise ValueError(f"Model saved directory '{model_path}' is not exists.")
    return tuple(found)
