"""fluid.io.save_inference_model / load_inference_model: a pruned ProgramDesc plus its parameters.

The layout is fluid's: ``dirname/__model__`` (or ``model_filename``) holds the program, as fluid 1.8
builds it (a ``scale`` op named ``save_infer_model/scale_<i>`` on each target, pruned to what the
targets need, ``feed`` ops first and ``fetch`` ops last), and the persistable variables follow in
fluid's parameter files: one per variable, or all in ``params_filename``. Paddle 1.x directories and
Paddle 2.x ``<prefix>.pdmodel`` + ``<prefix>.pdiparams`` pairs load too; so do models minifluid 0.1
wrote (pickled ``__model__``), through a restricted unpickler and with a warning.
"""
import os
import warnings

from .framework import unique_name
from .framework.program import Program
from .framework.program_desc import feed_target_names, fetch_target_names, parse_program, serialize_program
from .framework.variable import Variable, VarType
from .io_format import legacy, safe_pickle
from .ops.io import FEED_FETCH_OPS
from .serialization import _valid_program, is_persistable, load_persistables, save_persistables

__all__ = ["save_inference_model", "load_inference_model", "prepend_feed_ops", "append_fetch_ops",
           "static_save_inference_model", "static_load_inference_model"]

MODEL_FILENAME = "__model__"


def prepend_feed_ops(program, feed_target_names, feed_holder_name="feed"):
    if not feed_target_names:
        return
    block = program.global_block()
    holder = block.create_var(name=feed_holder_name, type=VarType.FEED_MINIBATCH, persistable=True, dtype=None)
    for i, name in enumerate(feed_target_names):
        block._prepend_op(type="feed", inputs={"X": [holder]}, outputs={"Out": [block.var(name)]}, attrs={"col": i})


def append_fetch_ops(program, fetch_target_names, fetch_holder_name="fetch"):
    block = program.global_block()
    holder = block.create_var(name=fetch_holder_name, type=VarType.FETCH_LIST, persistable=True, dtype=None)
    for i, name in enumerate(fetch_target_names):
        block.append_op(type="fetch", inputs={"X": [name]}, outputs={"Out": [holder]}, attrs={"col": i})


def _add_target_scales(program, target_names):
    """fluid 1.8's ``scale(x, 1.0, name='save_infer_model/scale_<i>')`` on each target: returns their names."""
    block = program.global_block()
    names = []
    for i, name in enumerate(target_names):
        target = block._var_recursive(name)
        out = block.create_var(name=unique_name.generate(f"save_infer_model/scale_{i}.tmp"), shape=target.shape,
                               dtype=target.dtype, lod_level=target.lod_level)
        block.append_op(type="scale", inputs={"X": [target]}, outputs={"Out": [out]},
                        attrs={"scale": 1.0, "bias": 0.0, "bias_after_scale": True})
        names.append(out.name)
    return names


def _prune_for_inference(program, feed_names, target_names):
    """A test-mode copy keeping only the ops the targets need, stopping at the fed variables."""
    infer = program._inference_optimize(prune_read_op=True)._prune_with_input(list(feed_names), list(target_names))
    for name in feed_names:
        infer.global_block().var(name).stop_gradient = True
    return infer


def save_inference_model(dirname, feeded_var_names, target_vars, executor, main_program=None,
                         model_filename=None, params_filename=None, export_for_deployment=True,
                         program_only=False):
    """Save an inference model in fluid's format: the program pruned to what ``target_vars`` need from
    the fed variables, in test mode, and its parameters.

    Args:
        dirname (str): the folder (created if missing).
        feeded_var_names (str or list of str): names of the variables fed at inference.
        target_vars (Variable or list of Variable): what inference fetches (e.g. the prediction).
        executor (Executor): runs nothing; fluid's signature. main_program (Program, optional).
        model_filename (str, optional): the program's file name (default ``__model__``).
        params_filename (str, optional): one file for all parameters instead of one per parameter.
        export_for_deployment (bool, default True): prune and add feed/fetch ops (False: the whole
            program, as ``<model>.main_program``). program_only (bool, default False): no parameters.

    Returns:
        list of str: the fetch targets' names (the ``save_infer_model/scale_<i>`` outputs, as in fluid 1.8).
    """
    if isinstance(feeded_var_names, str):
        feeded_var_names = [feeded_var_names]
    elif export_for_deployment and feeded_var_names and not all(isinstance(n, str) for n in feeded_var_names):
        raise ValueError("'feed_var_names' should be a list of str.")
    if isinstance(target_vars, Variable):
        target_vars = [target_vars]
    elif export_for_deployment and not (target_vars and all(isinstance(v, Variable) for v in target_vars)):
        raise ValueError("'target_vars' should be a list of Variable.")
    source = _valid_program(main_program)
    os.makedirs(os.path.normpath(dirname), exist_ok=True)
    model_path = os.path.join(os.path.normpath(dirname), os.path.basename(model_filename or MODEL_FILENAME))
    program = source.clone()
    block = program.global_block()
    block.ops = [op for op in block.ops if op.type not in FEED_FETCH_OPS]
    target_names = _add_target_scales(program, [v.name for v in target_vars])
    if export_for_deployment:
        program = _prune_for_inference(program, list(feeded_var_names), target_names)
        prepend_feed_ops(program, list(feeded_var_names))
        append_fetch_ops(program, target_names)
    else:
        model_path += ".main_program"
    with open(model_path, "wb") as f:
        f.write(serialize_program(program))
    if program_only:
        warnings.warn("save_inference_model specified the param `program_only` to True, It will not save params "
                      "of Program.")
        return target_names
    save_persistables(executor, dirname, program, os.path.basename(params_filename) if params_filename else None)
    return target_names


def _locate(dirname, model_filename, params_filename):
    """(model path, parameter directory, parameter file name) for a fluid directory or a 2.x path prefix."""
    if not os.path.isdir(dirname) and os.path.isfile(dirname + ".pdmodel") and model_filename is None:
        params = os.path.basename(dirname) + ".pdiparams"
        return dirname + ".pdmodel", os.path.dirname(dirname) or ".", params_filename or params
    if not os.path.isdir(dirname):
        raise ValueError(f"There is no directory named '{dirname}' (nor a Paddle 2.x model {dirname}.pdmodel)")
    model_path = os.path.join(dirname, os.path.basename(model_filename or MODEL_FILENAME))
    if not os.path.isfile(model_path):
        raise ValueError(f"There is no inference model in {dirname!r}: no file {model_path}")
    return model_path, dirname, os.path.basename(params_filename) if params_filename else None


def load_inference_model(dirname, executor, model_filename=None, params_filename=None, pserver_endpoints=None):
    """Load an inference model; the parameters go into the current scope.

    Args:
        dirname (str or None): a directory (fluid 1.x: ``__model__`` or ``model_filename``, parameters
            one per file or in ``params_filename``), a Paddle 2.x path prefix (``<prefix>.pdmodel`` +
            ``<prefix>.pdiparams``), or None with the model's and the parameters' bytes in the next two.
        executor (Executor): fluid's signature.
        model_filename, params_filename (str or bytes, optional): as given to ``save_inference_model``.
        pserver_endpoints: accepted for fluid's signature (no parameter servers here).

    Returns:
        ``[program, feed_target_names, fetch_targets]``: run ``exe.run(program, feed={name: data},
        fetch_list=fetch_targets)``.
    """
    if dirname is None:
        if params_filename is None:
            raise ValueError("The path of params cannot be None when the directory path is None.")
        data, source, params_dir = bytes(model_filename), "the model given in memory", None
    else:
        source, params_dir, params_filename = _locate(os.path.normpath(dirname), model_filename, params_filename)
        with open(source, "rb") as f:
            data = f.read()
    if safe_pickle.is_pickle(data[:2]):
        program, feeds, fetches = legacy.read_pickled_program(data, source, Program)
    else:
        program = parse_program(data, Program, source)
        feeds, fetches = feed_target_names(program), fetch_target_names(program)
    if any(is_persistable(v) for v in program.list_vars()):
        load_persistables(executor, params_dir, program, params_filename)
    block = program.global_block()
    return [program, feeds, [block.var(name) for name in fetches]]


def _variables(what, value):
    value = [value] if isinstance(value, Variable) else value
    if not isinstance(value, (list, tuple)) or not value or not all(isinstance(v, Variable) for v in value):
        raise ValueError(f"'{what}' should be a Variable or a list of Variable.")
    return list(value)


def static_save_inference_model(path_prefix, feed_vars, fetch_vars, executor, **kwargs):
    """paddle.static.save_inference_model (2.x): ``<path_prefix>.pdmodel`` + ``<path_prefix>.pdiparams``."""
    if not path_prefix or os.path.basename(path_prefix) == "" or os.path.isdir(path_prefix):
        raise ValueError(f"The path_prefix {path_prefix!r} should be a path prefix like 'dirname/filename', not a "
                         "directory")
    feed_vars, fetch_vars = _variables("feed_vars", feed_vars), _variables("fetch_vars", fetch_vars)
    dirname, base = os.path.split(os.path.normpath(path_prefix))
    return save_inference_model(dirname or ".", [v.name for v in feed_vars], fetch_vars, executor,
                                kwargs.get("program"), model_filename=base + ".pdmodel",
                                params_filename=base + ".pdiparams")


def static_load_inference_model(path_prefix, executor, **kwargs):
    """paddle.static.load_inference_model (2.x): from ``<path_prefix>.pdmodel`` + ``.pdiparams``; with
    ``model_filename`` / ``params_filename``, from the fluid 1.x directory ``path_prefix``."""
    if path_prefix is not None and not kwargs and not os.path.isfile(path_prefix + ".pdmodel"):
        raise ValueError(f"There is no model file {path_prefix}.pdmodel")
    return load_inference_model(path_prefix, executor, kwargs.get("model_filename"), kwargs.get("params_filename"))
