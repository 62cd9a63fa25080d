"""fluid.io's variable files: ``save_vars`` / ``load_vars`` and their params / persistables forms.

Files are fluid's own binary LoDTensor format (``io_format/tensor_file.py``), byte for byte what
Paddle writes for the same values: one file per variable (``dirname/<name>``), or, with
``filename=``, every variable in one file in the order of the sorted names. With neither ``dirname``
nor ``filename``, ``save_vars`` returns those bytes and ``load_vars(dirname=None, filename=bytes)``
reads them. Files minifluid 0.1 wrote (numpy ``.npy`` / ``.npz``) still load, with a warning.

The ``load`` op (fluid.layers.load) is registered here, beside the file format it reads (ops/ stays below the
file formats): it fills its output from one such file when the program runs, with its LoD; ``seek`` / ``shape``
read a slice of the data (``shape`` elements from element ``seek`` on), ``load_as_fp16`` casts to float16.
"""
import io
import os
import warnings

import numpy as np

from .executor.scope import global_scope
from .framework.program import Program, default_main_program
from .framework.variable import Parameter, VarType
from .io_format import legacy
from .lod_tensor import offsets_to_lengths
from .io_format.tensor_file import ModelFormatError, read_tensor, read_tensors, write_tensor
from .ops.registry import register_op

__all__ = ["save_vars", "load_vars", "save_params", "load_params", "save_persistables", "load_persistables",
           "is_parameter", "is_persistable", "is_belong_to_optimizer", "get_program_parameter",
           "get_program_persistable_vars", "get_parameter_value", "get_parameter_value_by_name"]


def is_parameter(var):
    return isinstance(var, Parameter)


def is_persistable(var):
    return var.persistable and var.type not in (VarType.READER, VarType.FEED_MINIBATCH, VarType.FETCH_LIST, VarType.RAW,
                                                 VarType.LOD_RANK_TABLE, VarType.STEP_SCOPES)


def is_belong_to_optimizer(var):
    """What fluid.save puts in .pdopt: persistables that are neither parameters nor fed data."""
    return is_persistable(var) and not is_parameter(var) and not var.need_check_feed and not var.is_data


def get_program_parameter(program):
    return [v for v in program.list_vars() if is_parameter(v)]


def get_program_persistable_vars(program):
    return [v for v in program.list_vars() if is_persistable(v)]


def get_parameter_value(para, executor):
    """A copy of the parameter's value in the global scope (fluid fetches it with a one-variable program)."""
    if not is_parameter(para):
        raise AssertionError("The input variable is not parameter.")
    found = global_scope().find_var(para.name)
    if found is None or not found.is_initialized():
        raise RuntimeError(f"Parameter {para.name!r} is not initialized in the scope (run the startup program first)")
    return np.array(found.get_tensor())


def get_parameter_value_by_name(name, executor, program=None):
    """``get_parameter_value`` of the parameter ``name`` of ``program`` (default: the default main program)."""
    program = default_main_program() if program is None else program
    return get_parameter_value(program.global_block().var(name), executor)


def _valid_program(main_program):
    program = default_main_program() if main_program is None else main_program
    program = getattr(program, "_program", program)  # a CompiledProgram
    if not isinstance(program, Program):
        raise TypeError("The type of input main_program is invalid, expected type is fluid.Program, but "
                        f"received {type(main_program)}")
    return program


def _chosen(main_program, vars, predicate):
    program = _valid_program(main_program)  # a TypeError for a bad one even when ``vars`` are given, as in fluid
    if vars is None:
        vars = [v for v in program.list_vars() if (predicate or is_persistable)(v)]
    return [v for v in vars if v.type not in (VarType.RAW, VarType.LOD_RANK_TABLE, VarType.STEP_SCOPES)]


def tensor_of(scope, name, what="variable"):
    """The scope's value of ``name`` and its LoD (offsets), for writing."""
    found = scope.find_var(name)
    if found is None or not found.is_initialized():
        raise RuntimeError(f"Cannot save {what} {name!r}: it is not initialized in the scope "
                           "(run the startup program first)")
    tensor = found.get_tensor()
    return np.asarray(tensor), tensor.lod()


def save_vars(executor, dirname, main_program=None, vars=None, predicate=None, filename=None, scope=None):
    """Write variables' values from the scope in fluid's binary format.

    Args:
        executor (Executor): accepted for fluid's signature; the values come from ``scope``.
        dirname (str): the folder (created if missing): one file per variable, named after it.
        main_program (Program, optional): where to pick variables (default: the default main program).
        vars (list of Variable, optional): exactly these; else those of ``main_program`` that
            ``predicate`` accepts (default ``is_persistable``).
        predicate (callable, optional): ``predicate(var) -> bool``.
        filename (str, optional): one file ``dirname/filename`` holding them all instead.
        scope (Scope, optional): default ``fluid.global_scope()``.

    Returns:
        None; with ``dirname`` and ``filename`` both None, the bytes of a combined file.
    """
    scope = scope or global_scope()
    chosen = _chosen(main_program, vars, predicate)
    if not chosen:
        warnings.warn("no variable in your model, please ensure there are any variables in your model to save")
        return None
    tensors = {v.name: tensor_of(scope, v.name) for v in chosen}
    if filename is None and dirname is not None:
        for name, (array, lod) in tensors.items():
            path = os.path.join(os.path.normpath(dirname), name)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as f:
                write_tensor(f, array, lod)
        return None
    if dirname is None and filename is None:
        with io.BytesIO() as f:
            _write_combined(f, tensors)
            return f.getvalue()
    os.makedirs(os.path.normpath(dirname), exist_ok=True)
    with open(os.path.join(os.path.normpath(dirname), filename), "wb") as f:
        _write_combined(f, tensors)
    return None


def _write_combined(f, tensors):
    for name in sorted(tensors):
        write_tensor(f, *tensors[name])


def _read_one(path, name):
    if not os.path.isfile(path):
        raise ModelFormatError(f"Load operator fail to open file {path}, please check whether the model file is "
                               f"complete or damaged (no file for variable {name!r})")
    with open(path, "rb") as f:
        if f.read(len(legacy.NPY_MAGIC)) == legacy.NPY_MAGIC:
            f.seek(0)
            return legacy.read_npy(f, path, name)
        f.seek(0)
        return read_tensor(f, path, name)


def _read_combined(dirname, filename, names):
    if dirname is None:  # fluid's "model_from_memory": filename holds the bytes
        if not isinstance(filename, (bytes, bytearray)):
            raise ValueError("The directory path and params cannot be None at the same time.")
        return _read_combined_from(io.BytesIO(filename), "the parameters given in memory", names)
    source = os.path.join(dirname, filename)
    if not os.path.isfile(source):
        raise ModelFormatError(f"LoadCombine operator fails to open file {source}, please check whether the "
                               "model file is complete or damaged.")
    with open(source, "rb") as f:
        return _read_combined_from(f, source, names)


def _read_combined_from(f, source, names):
    if f.read(len(legacy.ZIP_MAGIC)) == legacy.ZIP_MAGIC:
        f.seek(0)
        return legacy.read_npz(f.read(), source, names)
    f.seek(0)
    return read_tensors(f, source, names)


def read_var_files(dirname, names, filename=None):
    """``{name: (array, lod)}`` read from the files ``save_vars`` writes (``filename``: one combined file,
    ``dirname`` None: its bytes)."""
    if filename is None:
        if dirname is None:
            raise ValueError("The directory path and params cannot be None at the same time.")
        return {n: _read_one(os.path.join(os.path.normpath(dirname), n), n) for n in names}
    return _read_combined(None if dirname is None else os.path.normpath(dirname), filename, sorted(names))


def check_loaded(var, value, source):
    """fluid's check of a loaded value against the program's variable (a shape with -1 matches any size)."""
    shape = var.shape
    if shape is not None and (len(shape) != value.ndim or any(d >= 0 and d != s for d, s in zip(shape, value.shape))):
        raise RuntimeError(
            "Variable's shape does not match, the Program requires a parameter with the shape of "
            f"({tuple(shape)}), while the loaded parameter (namely [ {var.name} ]) has a shape of  "
            f"({value.shape}). (read from {source})")
    if var.dtype is not None and value.dtype.name != var.dtype:
        raise RuntimeError(f"Variable {var.name!r} is {var.dtype} in the program but {value.dtype.name} in {source}")


def set_tensor(scope, name, value, lod=None):
    """Put ``value`` (with LoD ``lod``, offsets per level) into the scope's slot ``name``."""
    slot = scope.var(name)
    slot.set_value(value)  # a fresh array nobody else holds: no defensive copy (200 MB models)
    slot.get_tensor().set_recursive_sequence_lengths(offsets_to_lengths(lod) if lod else [])


def load_vars(executor, dirname, main_program=None, vars=None, predicate=None, filename=None, scope=None):
    """Read variables (as ``save_vars`` wrote them) into the scope, each checked against the program's
    shape and dtype; nothing is set unless every variable reads.

    Args:
        executor, dirname, main_program, vars, predicate, filename, scope: as for ``save_vars``
            (``dirname=None`` with ``filename`` holding a combined file's bytes reads from memory).
    """
    scope = scope or global_scope()
    chosen = _chosen(main_program, vars, predicate)
    found = read_var_files(dirname, [v.name for v in chosen], filename)
    source = dirname if filename is None else (os.path.join(dirname, filename) if dirname else "memory")
    for v in chosen:
        check_loaded(v, found[v.name][0], source)
    for v in chosen:
        set_tensor(scope, v.name, *found[v.name])


def save_params(executor, dirname, main_program=None, filename=None):
    """Save the parameters of ``main_program`` (weights, biases; not optimizer state) to ``dirname``.

    Args:
        executor (Executor): fluid's signature. dirname (str): the folder.
        main_program (Program, optional): default: the default main program.
        filename (str, optional): one file for all of them instead of one file per parameter.
    """
    return save_vars(executor, dirname, main_program, predicate=is_parameter, filename=filename)


def load_params(executor, dirname, main_program=None, filename=None):
    """Load the parameters of ``main_program`` from ``dirname`` (as ``save_params`` wrote them).

    Args:
        executor, dirname, main_program, filename: as for ``save_params``.
    """
    load_vars(executor, dirname, main_program, predicate=is_parameter, filename=filename)


def save_persistables(executor, dirname, main_program=None, filename=None):
    """Save every persistable variable of ``main_program`` (parameters and optimizer state: moments,
    learning rate, step counters) to ``dirname``, to resume training later.

    Args:
        executor, dirname, main_program, filename: as for ``save_params``.
    """
    return save_vars(executor, dirname, main_program, predicate=is_persistable, filename=filename)


def load_persistables(executor, dirname, main_program=None, filename=None):
    """Load every persistable variable of ``main_program`` from ``dirname`` (``save_persistables``'s files).

    Args:
        executor, dirname, main_program, filename: as for ``save_params``.
    """
    load_vars(executor, dirname, main_program, predicate=is_persistable, filename=filename)


# --- the load op ---------------------------------------------------------------------------------------
def _load_infer(attrs):
    if attrs["seek"] != -1 and attrs["seek"] < 0:
        raise ValueError(f"load: seek must be -1 (the whole tensor) or an element offset >= 0, but received "
                         f"{attrs['seek']}.")
    return None


@register_op("load", inputs=(), outputs=("Out",),
             attrs={"file_path": "", "load_as_fp16": False, "seek": -1, "shape": []},
             infer_shape=_load_infer, context=True, no_gradient=True)
def _load(ctx, attrs):
    _load_infer(attrs)
    path = attrs["file_path"]
    name = ctx.op.outputs["Out"][0]
    if not os.path.isfile(path):
        raise ModelFormatError(f"Load operator fail to open file {path}, please check whether the model file is "
                               f"complete or damaged (no file for variable {name!r}).")
    with open(path, "rb") as f:
        value, lod = read_tensor(f, path, name)
    if attrs["seek"] != -1:
        shape = [int(d) for d in attrs["shape"]]
        count = int(np.prod(shape))
        flat = value.reshape(-1)
        if attrs["seek"] + count > flat.size:
            raise ModelFormatError(f"load: {path} holds {flat.size} elements of {name!r}; seek {attrs['seek']} with "
                                   f"shape {shape} reads past its end.")
        value, lod = flat[attrs["seek"]:attrs["seek"] + count].reshape(shape).copy(), []
    if attrs["load_as_fp16"]:
        value = value.astype(np.float16)
    ctx.set_output_lod("Out", [np.diff(level).tolist() for level in lod])
    return value
