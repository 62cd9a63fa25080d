"""fluid.io's save/load functions on numpy files.

One variable per file (``dirname/<var name>``, numpy ``.npy`` format without the
extension, as fluid names them), or every variable in one ``.npz`` archive when a
``filename`` is given. Inference models keep the pruned Program as a pickle
(``__model__``): readable only by minifluid, like fluid's protobuf was only by fluid.
``save(program, path)`` / ``load(program, path)`` (fluid 1.6+) write ``path.pdparams`` (parameters),
``path.pdopt`` (other persistables: optimizer state, step counters) and ``path.pdmodel`` (the
Program), each a pickle of ``{name: ndarray}`` as fluid's are.
"""
import os
import pickle

import numpy as np

from .executor.scope import global_scope
from .framework.program import Program, default_main_program
from .framework.variable import Parameter, VarType

__all__ = ["save_vars", "load_vars", "save_params", "load_params", "save_persistables", "load_persistables",
           "save_inference_model", "load_inference_model", "is_parameter", "is_persistable", "save", "load"]

MODEL_FILENAME = "__model__"


def is_parameter(var):
    return isinstance(var, Parameter)


def is_persistable(var):
    return var.persistable and var.type not in (VarType.READER, VarType.FEED_MINIBATCH, VarType.FETCH_LIST, VarType.RAW)


def _select(main_program, vars, predicate):
    if vars is not None:
        return list(vars)
    program = main_program or default_main_program()
    return [v for v in program.list_vars() if predicate(v)]


def save_vars(executor, dirname, main_program=None, vars=None, predicate=None, filename=None, scope=None):
    """Write variables' values from the scope into ``dirname`` (created if missing).

    Args:
        executor (Executor): accepted for fluid's signature; the values come from ``scope``.
        dirname (str): the folder; one ``.npy``-format file per variable, named after it.
        main_program (Program, optional): where to pick variables (default: the default main program).
        vars (list of Variable, optional): exactly these; else those of ``main_program`` that
            ``predicate`` accepts (default ``is_persistable``).
        predicate (callable, optional): ``predicate(var) -> bool``.
        filename (str, optional): one file ``dirname/filename`` holding them all instead.
        scope (Scope, optional): default ``fluid.global_scope()``.
    """
    scope = scope or global_scope()
    chosen = _select(main_program, vars, predicate or is_persistable)
    os.makedirs(dirname, exist_ok=True)
    values = _values([v.name for v in chosen], scope, "variable")
    if filename is not None:
        with open(os.path.join(dirname, filename), "wb") as f:
            np.savez(f, **values)
        return
    for name, value in values.items():
        with open(os.path.join(dirname, name), "wb") as f:
            np.save(f, value, allow_pickle=False)


def load_vars(executor, dirname, main_program=None, vars=None, predicate=None, filename=None, scope=None):
    """Read variables from ``dirname`` (as ``save_vars`` wrote them) into the scope.

    Args:
        executor, dirname, main_program, vars, predicate, filename, scope: as for ``save_vars``.

    Raises:
        RuntimeError: a variable has no file (or is not in ``filename``), or its saved shape differs
            from the program's.
    """
    scope = scope or global_scope()
    chosen = _select(main_program, vars, predicate or is_persistable)
    archive = np.load(os.path.join(dirname, filename)) if filename is not None else None
    for v in chosen:
        if archive is not None:
            if v.name not in archive:
                raise RuntimeError(f"{os.path.join(dirname, filename)} holds no variable {v.name!r}")
            value = archive[v.name]
        else:
            path = os.path.join(dirname, v.name)
            if not os.path.exists(path):
                raise RuntimeError(f"Cannot load variable {v.name!r}: no file {path}")
            with open(path, "rb") as f:
                value = np.load(f, allow_pickle=False)
        _set_checked(scope, v, value, dirname)


def _set_checked(scope, var, value, source):
    """Put a loaded ``value`` into ``var``'s slot in ``scope``, refusing a shape the program does not have."""
    if var.shape is not None and all(d >= 0 for d in var.shape) and tuple(value.shape) != tuple(var.shape):
        raise RuntimeError(f"Variable {var.name!r} has shape {list(var.shape)} in the program but "
                           f"{list(value.shape)} in {source}")
    scope.var(var.name).get_tensor().set(value.copy(), None)


def save_params(executor, dirname, main_program=None, filename=None):
    """Save the parameters of ``main_program`` (weights, biases; not optimizer state) to ``dirname``.

    Args:
        executor (Executor): fluid's signature. dirname (str): the folder.
        main_program (Program, optional): default: the default main program.
        filename (str, optional): one file for all of them instead of one file per parameter.
    """
    save_vars(executor, dirname, main_program, predicate=is_parameter, filename=filename)


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
    save_vars(executor, dirname, main_program, predicate=is_persistable, filename=filename)


def load_persistables(executor, dirname, main_program=None, filename=None):
    """Load every persistable variable of ``main_program`` from ``dirname`` (``save_persistables``'s files).

    Args:
        executor, dirname, main_program, filename: as for ``save_params``.
    """
    load_vars(executor, dirname, main_program, predicate=is_persistable, filename=filename)


def _prune_for_inference(program, feed_names, target_names):
    """A test-mode copy keeping only the ops the targets need, stopping at the fed variables."""
    infer = program.clone(for_test=True)._prune_with_input(list(feed_names), list(target_names))
    for name in feed_names:
        infer.global_block().var(name).stop_gradient = True
    return infer


def save_inference_model(dirname, feeded_var_names, target_vars, executor, main_program=None,
                         model_filename=None, params_filename=None, export_for_deployment=True,
                         program_only=False):
    """Save an inference model: the program pruned to what ``target_vars`` need from the fed variables,
    in test mode, and its parameters.

    Args:
        dirname (str): the folder (created if missing).
        feeded_var_names (str or list of str): names of the variables fed at inference.
        target_vars (Variable or list): what inference fetches (e.g. the prediction).
        executor (Executor): fluid's signature. main_program (Program or CompiledProgram, optional).
        model_filename (str, optional): the program's file name (default ``__model__``).
        params_filename (str, optional): one file for all parameters instead of one per parameter.
        export_for_deployment (bool): accepted for fluid's signature. program_only (bool): no parameters.

    Returns:
        list of str: the target names.
    """
    if isinstance(feeded_var_names, str):
        feeded_var_names = [feeded_var_names]
    if not isinstance(target_vars, (list, tuple)):
        target_vars = [target_vars]
    program = main_program or default_main_program()
    if not isinstance(program, Program):
        program = program._program  # a CompiledProgram
    targets = [t.name for t in target_vars]
    infer = _prune_for_inference(program, list(feeded_var_names), targets)
    infer._minifluid_feed_target_names = list(feeded_var_names)
    infer._minifluid_fetch_target_names = targets
    os.makedirs(dirname, exist_ok=True)
    with open(os.path.join(dirname, model_filename or MODEL_FILENAME), "wb") as f:
        pickle.dump(infer, f)
    if not program_only:
        save_persistables(executor, dirname, infer, params_filename)
    return targets


def load_inference_model(dirname, executor, model_filename=None, params_filename=None, pserver_endpoints=None):
    """Load what ``save_inference_model`` wrote; the parameters go into the current scope.

    Args:
        dirname (str): the folder. executor (Executor): fluid's signature.
        model_filename, params_filename (str, optional): as given to ``save_inference_model``.
        pserver_endpoints: accepted for fluid's signature (no parameter servers here).

    Returns:
        ``[program, feed_target_names, fetch_targets]``: run ``exe.run(program, feed={name: data},
        fetch_list=fetch_targets)``.
    """
    path = os.path.join(dirname, model_filename or MODEL_FILENAME)
    if not os.path.exists(path):
        raise ValueError(f"There is no inference model in {dirname!r} (expected {path})")
    with open(path, "rb") as f:
        program = pickle.load(f)
    load_persistables(executor, dirname, program, params_filename)
    block = program.global_block()
    fetch_targets = [block.var(n) for n in program._minifluid_fetch_target_names]
    return [program, list(program._minifluid_feed_target_names), fetch_targets]


_SUFFIXES = (".pdparams", ".pdopt", ".pdmodel")


def _is_optimizer_state(var):
    """What fluid.save puts in .pdopt: persistables that are neither parameters nor fed data."""
    return is_persistable(var) and not is_parameter(var) and not var.need_check_feed and not var.is_data


def _values(names, scope, what):
    values = {}
    for name in names:
        value = scope.find_value(name)
        if value is None:
            raise RuntimeError(f"Cannot save {what} {name!r}: it is not initialized in the scope "
                               "(run the startup program first)")
        values[name] = np.asarray(value)
    return values


def save(program, model_path):
    """fluid.save: parameters to ``model_path.pdparams``, optimizer state to ``.pdopt``, the Program to
    ``.pdmodel``.

    Args:
        program (Program): whose persistable variables are saved (values from the global scope).
        model_path (str): ``dirname/prefix``; the three files get the suffixes above.
    """
    if not os.path.basename(model_path):
        raise ValueError("The input model_path MUST be format of dirname/filename [dirname\\filename in Windows "
                         "system], but received filename is empty string.")
    if os.path.dirname(model_path):
        os.makedirs(os.path.dirname(model_path), exist_ok=True)
    scope = global_scope()
    params = _values([p.name for p in program.all_parameters()], scope, "parameter")
    state = _values([v.name for v in program.list_vars() if _is_optimizer_state(v)], scope, "variable")
    for suffix, content in ((".pdparams", params), (".pdopt", state), (".pdmodel", program)):
        with open(model_path + suffix, "wb") as f:
            pickle.dump(content, f, protocol=2)


def _load_into(scope, variables, path):
    with open(path, "rb") as f:
        stored = pickle.load(f)
    for v in variables:
        if v.name not in stored:
            raise RuntimeError(f"Can not find [{v.name}] in model file [{path}]")
        _set_checked(scope, v, np.asarray(stored[v.name]), path)


def load(program, model_path, executor=None, var_list=None):
    """fluid.load: set the program's parameters (and optimizer state, when it has any) from the files
    ``save`` wrote.

    Args:
        program (Program): whose variables are set (in the global scope).
        model_path (str): the prefix given to ``save`` (a name with one of its suffixes works too).
        executor (Executor, optional): fluid's signature.
        var_list (list of Variable, optional): load only these.
    """
    for suffix in _SUFFIXES:
        if model_path.endswith(suffix):
            model_path = model_path[:-len(suffix)]
    scope = global_scope()
    params_path = model_path + ".pdparams"
    if not os.path.exists(params_path):
        raise ValueError(f"Parameter file [{params_path}] not exits")
    _load_into(scope, program.all_parameters(), params_path)
    state = [v for v in program.list_vars() if _is_optimizer_state(v)]
    if state:
        opt_path = model_path + ".pdopt"
        if not os.path.exists(opt_path):
            raise ValueError(f"Optimizer file [{opt_path}] not exits")
        _load_into(scope, state, opt_path)
