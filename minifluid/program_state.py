"""fluid.save / fluid.load / load_program_state / set_program_state: ``.pdparams`` / ``.pdopt`` / ``.pdmodel``.

The files are Paddle's: ``.pdparams`` and ``.pdopt`` are pickles of ``{name: ndarray}`` (parameters;
other persistables such as optimizer moments and step counters), pickle protocol 2 as fluid 1.x wrote
them (``protocol=`` as Paddle 2.x's ``paddle.static.save``; arrays over 1 GiB are split into slices
under ``UnpackBigParamInfor@@`` below protocol 4, as Paddle does). ``.pdmodel`` is the ProgramDesc.
Reading goes through ``io_format.safe_pickle``, so a crafted checkpoint cannot run code.
"""
import math
import os
import pickle
import warnings

import numpy as np

from .executor.scope import global_scope
from .framework.variable import Variable
from .framework.program_desc import serialize_program
from .io_format import safe_pickle
from .serialization import (check_loaded, is_belong_to_optimizer, is_parameter, is_persistable, load_vars,
                            read_var_files, set_tensor, tensor_of)

__all__ = ["save", "load", "load_program_state", "set_program_state", "pack_loaded_dict", "unpack_saved_dict"]

_SUFFIXES = (".pdparams", ".pdopt", ".pdmodel")
_BIG = "UnpackBigParamInfor@@"
SLICE_BYTES = 2 ** 30 - 1  # Paddle's largest array slice in a protocol 2/3 pickle


def unpack_saved_dict(saved, protocol):
    """Paddle's split of arrays over 1 GiB into slices, which pickle protocols 2 and 3 need."""
    if protocol >= 4:
        return saved
    info, out = {}, {}
    for key, value in saved.items():
        per_slice = int(SLICE_BYTES / value.dtype.itemsize) if isinstance(value, np.ndarray) else 0
        if per_slice and value.size > per_slice:
            flat = value.reshape(-1)
            slices = [f"{key}@@.{i}" for i in range(math.ceil(value.size / per_slice))]
            info[key] = {"OriginShape": value.shape, "slices": slices}
            out.update((s, flat[i * per_slice:(i + 1) * per_slice]) for i, s in enumerate(slices))
        else:
            out[key] = value
    if info:
        out[_BIG] = info
    return out


def pack_loaded_dict(loaded):
    """Undo ``unpack_saved_dict`` on a loaded dict."""
    if not isinstance(loaded, dict) or _BIG not in loaded:
        return loaded
    info = loaded.pop(_BIG)
    for key, value in info.items():
        loaded[key] = np.concatenate([loaded.pop(s) for s in value["slices"]]).reshape(value["OriginShape"])
    return loaded


def save(program, model_path, protocol=2, **configs):
    """fluid.save: parameters to ``model_path.pdparams``, other persistables to ``.pdopt``, the program to
    ``.pdmodel``.

    Args:
        program (Program): whose persistable variables are saved (values from the global scope).
        model_path (str): ``dirname/prefix``; the three files get the suffixes above.
        protocol (int, default 2): the pickle protocol of the two state files (2 to 4).
        configs: accepted for paddle's signature.
    """
    if not os.path.basename(model_path):
        raise ValueError("The input model_path MUST be format of dirname/filename [dirname\\filename in Windows "
                         "system], but received filename is empty string.")
    if not isinstance(protocol, int) or not 1 < protocol < 5:
        raise ValueError(f"Expected 1<'protocol'<5, but received protocol={protocol}")
    if os.path.dirname(model_path):
        os.makedirs(os.path.dirname(model_path), exist_ok=True)
    scope = global_scope()
    variables = list(program.list_vars())
    for suffix, chosen in ((".pdparams", is_parameter), (".pdopt", is_belong_to_optimizer)):
        state = unpack_saved_dict({v.name: tensor_of(scope, v.name)[0] for v in variables if chosen(v)}, protocol)
        with open(model_path + suffix, "wb") as f:
            pickle.dump(state, f, protocol=protocol)
    with open(model_path + ".pdmodel", "wb") as f:
        f.write(serialize_program(program))


def _prefix(model_path):
    for suffix in _SUFFIXES:
        if model_path.endswith(suffix):
            return model_path[:-len(suffix)]
    return model_path


def _read_state(path):
    with open(path, "rb") as f:
        state = pack_loaded_dict(safe_pickle.load(f, path))
    if not isinstance(state, dict):
        raise ValueError(f"{path} holds a {type(state).__name__}, not the {{name: array}} dict fluid.save writes")
    return state


def _load_into(scope, variables, path):
    state = _read_state(path)
    for v in variables:
        if v.name not in state:
            raise RuntimeError(f"Can not find [{v.name}] in model file [{path}]")
        check_loaded(v, np.asarray(state[v.name]), path)
    for v in variables:
        set_tensor(scope, v.name, np.asarray(state[v.name]))


def _files_under(dirname):
    return sorted(os.path.relpath(os.path.join(root, f), dirname).replace("\\", "/")
                  for root, _, files in os.walk(dirname) for f in files)


def load(program, model_path, executor=None, var_list=None):
    """fluid.load: set the program's parameters (and optimizer state, when it has any) from the files
    ``save`` wrote.

    Args:
        program (Program): whose variables are set (in the global scope).
        model_path (str): the prefix given to ``save`` (or one of its files); a directory of
            ``save_vars`` files, or one combined file with ``var_list``, loads too (as in fluid 1.8).
        executor (Executor, optional): required (as in fluid) for files ``save_vars`` wrote.
        var_list (list of Variable, optional): load only these.
    """
    prefix = _prefix(model_path)
    params_path = prefix + ".pdparams"
    if not os.path.exists(params_path) and os.path.exists(model_path):
        if executor is None:
            raise ValueError("executor is required when loading model file saved with [ save_params, "
                             "save_persistables, save_vars ]")
        return _load_save_vars_files(program, model_path, var_list)
    if not os.path.exists(params_path):
        raise ValueError(f"Parameter file [{params_path}] not exits")
    scope = global_scope()
    _load_into(scope, [v for v in program.list_vars() if is_parameter(v)], params_path)
    state = [v for v in program.list_vars() if is_belong_to_optimizer(v)]
    if state:
        opt_path = prefix + ".pdopt"
        if not os.path.exists(opt_path):
            raise ValueError(f"Optimizer file [{opt_path}] not exits")
        _load_into(scope, state, opt_path)


def _load_save_vars_files(program, model_path, var_list):
    if os.path.isdir(model_path):
        files = set(_files_under(model_path))
        chosen = [v for v in program.list_vars() if v.name in files]
        unused = files - {v.name for v in chosen}
        if unused:
            warnings.warn(f"variable file [ {' '.join(sorted(unused))} ] not used")
        load_vars(None, model_path, vars=chosen)
        return
    if var_list is None:
        raise ValueError("var_list is required when loading model file saved with [ save_params, "
                         "save_persistables, save_vars ]")
    names = {v.name for v in program.list_vars()}
    for v in var_list:
        if v.name not in names:
            raise LookupError(f"loaded var [{v.name}] is not in program variable list")
    load_vars(None, os.path.dirname(model_path), vars=var_list, filename=os.path.basename(model_path))


def load_program_state(model_path, var_list=None):
    """``{name: ndarray}`` from ``.pdparams`` (+ ``.pdopt`` when present), or from ``save_vars`` files (a
    directory: every file; one combined file: the variables of ``var_list``)."""
    prefix = _prefix(model_path)
    params_path = prefix + ".pdparams"
    if os.path.exists(params_path):
        state = _read_state(params_path)
        if os.path.exists(prefix + ".pdopt"):
            state.update(_read_state(prefix + ".pdopt"))
        return state
    if var_list is not None and not all(isinstance(v, Variable) for v in var_list):
        raise TypeError("value in var_list must be variable")
    if os.path.isfile(model_path):
        if var_list is None:
            raise ValueError("var_list can not be None when model_path is a file type")
        found = read_var_files(os.path.dirname(model_path), [v.name for v in var_list],
                               os.path.basename(model_path))
    elif os.path.isdir(model_path):
        names = [v.name for v in var_list] if var_list is not None else _files_under(model_path)
        found = read_var_files(model_path, names)
    else:
        raise ValueError(f"Parameter file [{params_path}] not exits")
    return {name: array for name, (array, _) in found.items()}


def set_program_state(program, state_dict):
    """Set the program's persistable variables from ``state_dict`` (``load_program_state``'s result)."""
    scope = global_scope()
    used = set()
    for var in program.list_vars():
        if not is_persistable(var):
            continue
        found = scope.find_var(var.name)
        if found is None:
            raise AssertionError(f"Variable [ {var.name} ] Not found, Please make sure run startup program")
        if var.name not in state_dict:
            continue
        current, new = np.asarray(found.get_tensor()), np.asarray(state_dict[var.name])
        if current.shape != new.shape:
            raise AssertionError(
                "Parameter's shape does not match, the Program requires a parameter with the shape of "
                f"({current.shape}), while the loaded parameter (namely [ {var.name} ]) has a shape of  "
                f"({new.shape}).")
        if current.dtype != new.dtype:
            raise AssertionError(
                "Parameter's data type does not match, the Program requires a parameter with a dtype of "
                f"({current.dtype}), while the loaded parameter (namely [ {var.name} ]) has a dtype of  "
                f"({new.dtype}).")
        set_tensor(scope, var.name, new)
        used.add(var.name)
    unused = [k for k in state_dict if k not in used]
    if unused:
        warnings.warn("This list is not set, Because of Paramerter not found in program. There are: "
                      + " ".join(unused))
