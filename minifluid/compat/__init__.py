"""Run legacy ``import paddle.fluid as fluid`` scripts on minifluid, unchanged.

``install()`` puts a meta-path finder in front of ``sys.meta_path`` that answers
``import paddle``, ``paddle.fluid``, ``paddle.fluid.core``, ``paddle.dataset.mnist``,
``paddle.reader``, ``paddle.io`` … with minifluid's own modules (``six``, which such scripts
import too, is the real package: a dependency of minifluid). Nothing is written to
site-packages; ``uninstall()`` removes the finder and every module it created.
``python -m minifluid.compat SCRIPT`` does both around one script.

An attribute or submodule minifluid does not have raises ``UnsupportedAPIError`` (a
``NotImplementedError`` that is also an AttributeError/ImportError, so ``hasattr`` keeps
working) naming it and what to write instead, or the API family it belongs to (hints.py).
"""
import importlib
import importlib.abc
import importlib.util
import sys
import types

from ..version import full_version as _FLUID_VERSION
from .hints import hint

__all__ = ["install", "uninstall", "installed", "UnsupportedAPIError", "MODULE_MAP", "supported_api"]


class UnsupportedAPIError(NotImplementedError, AttributeError):
    """A fluid API that minifluid does not implement."""


class UnsupportedModuleError(NotImplementedError, ImportError):
    """A fluid module that minifluid does not implement."""


# paddle module name -> minifluid module name (None: a namespace with only submodules/attrs)
MODULE_MAP = {
    "paddle": "minifluid.compat.paddle_ns",
    "paddle.fluid": "minifluid",
    "paddle.fluid.core": "minifluid.core",
    "paddle.fluid.op": "minifluid.op",
    "paddle.fluid.default_scope_funcs": "minifluid.default_scope_funcs",
    "paddle.fluid.dygraph_utils": "minifluid.dygraph_utils",
    "paddle.fluid.wrapped_decorator": "minifluid.wrapped_decorator",
    "paddle.fluid.framework": "minifluid.framework",
    "paddle.fluid.unique_name": "minifluid.framework.unique_name",
    "paddle.fluid.executor": "minifluid.executor",
    "paddle.fluid.compiler": "minifluid.executor.compiled",
    "paddle.fluid.layers": "minifluid.layers",
    "paddle.fluid.layers.device": "minifluid.layers.device",
    "paddle.fluid.layer_helper": "minifluid.layers.helper",
    "paddle.fluid.layers.distributions": "minifluid.layers.distributions",
    **{f"paddle.fluid.layers.{name}": "minifluid.layers"  # fluid's layer modules: every layer function there
       for name in ("nn", "io", "tensor", "ops", "learning_rate_scheduler", "detection",
                    "metric_op", "math_op_patch", "loss")},
    "paddle.fluid.layers.control_flow": "minifluid.layers.control_flow_api",  # fluid.layers + ConditionalBlock...
    "paddle.fluid.layers.rnn": "minifluid.layers.rnn",  # the module; ``fluid.layers.rnn`` stays the function
    "paddle.fluid.layers.utils": "minifluid.layers.nest",
    "paddle.fluid.parallel_executor": "minifluid.parallel_executor",
    "paddle.fluid.metrics": "minifluid.metrics",
    "paddle.fluid.contrib": "minifluid.contrib",
    "paddle.fluid.contrib.trainer": "minifluid.contrib.trainer",
    "paddle.fluid.contrib.layers": "minifluid.contrib.layers",
    "paddle.fluid.contrib.layers.nn": "minifluid.contrib.layers.nn",
    "paddle.fluid.contrib.layers.rnn_impl": "minifluid.contrib.layers.rnn_impl",
    "paddle.fluid.contrib.inferencer": "minifluid.contrib.inferencer",
    "paddle.fluid.trainer": "minifluid.contrib.trainer",  # fluid 0.x-1.0's home of the book's Trainer
    "paddle.fluid.inferencer": "minifluid.contrib.inferencer",
    "paddle.fluid.transpiler": "minifluid.transpiler",
    "paddle.fluid.profiler": "minifluid.profiler",
    "paddle.fluid.average": "minifluid.average",
    "paddle.fluid.nets": "minifluid.nets",
    "paddle.fluid.io": "minifluid.io",
    "paddle.fluid.reader": "minifluid.fluid_reader",
    "paddle.fluid.generator": "minifluid.generator",
    "paddle.fluid.dataloader": "minifluid.data.dataset",
    "paddle.fluid.dataloader.dataloader_iter": "minifluid.data.worker",
    "paddle.fluid.data_feeder": "minifluid.data.feeder",
    "paddle.fluid.dataset": "minifluid.data.file_dataset",
    "paddle.fluid.optimizer": "minifluid.optimizer",
    "paddle.fluid.initializer": "minifluid.initializer",
    "paddle.fluid.param_attr": "minifluid.param_attr",
    "paddle.fluid.regularizer": "minifluid.regularizer",
    "paddle.fluid.clip": "minifluid.clip",
    "paddle.fluid.backward": "minifluid.backward",
    "paddle.fluid.dygraph": "minifluid.dygraph",
    "paddle.fluid.dygraph.nn": "minifluid.dygraph.nn",
    "paddle.fluid.dygraph.base": "minifluid.dygraph.base",
    "paddle.fluid.dygraph.container": "minifluid.dygraph.container",
    "paddle.fluid.dygraph.learning_rate_scheduler": "minifluid.lr_decay",
    "paddle.fluid.dygraph.parallel": "minifluid.dygraph.parallel",
    "paddle.fluid.dygraph.jit": "minifluid.dygraph.jit",
    "paddle.dataset": "minifluid.dataset",
    "paddle.distributed": "minifluid.compat.paddle_distributed",
    "paddle.dataset.mnist": "minifluid.dataset.mnist",
    "paddle.dataset.digits": "minifluid.dataset.digits",
    "paddle.dataset.common": "minifluid.dataset.common",
    "paddle.dataset.uci_housing": "minifluid.dataset.uci_housing",
    "paddle.dataset.cifar": "minifluid.dataset.cifar",
    "paddle.dataset.imdb": "minifluid.dataset.imdb",
    "paddle.dataset.imikolov": "minifluid.dataset.imikolov",
    "paddle.dataset.movielens": "minifluid.dataset.movielens",
    "paddle.dataset.conll05": "minifluid.dataset.conll05",
    "paddle.dataset.wmt14": "minifluid.dataset.wmt14",
    "paddle.dataset.wmt16": "minifluid.dataset.wmt16",
    "paddle.dataset.flowers": "minifluid.dataset.flowers",
    "paddle.dataset.image": "minifluid.dataset.image",
    "paddle.reader": "minifluid.reader",
    "paddle.io": "minifluid.dygraph.paddle_io",
    "paddle.nn": "minifluid.dygraph.paddle_nn",
    "paddle.nn.functional": "minifluid.dygraph.functional",
    "paddle.optimizer": "minifluid.dygraph.paddle_optimizer",
    "paddle.optimizer.lr": "minifluid.dygraph.paddle_lr",
    "paddle.metric": "minifluid.dygraph.paddle_metric",
    "paddle.static": "minifluid.compat.static_ns",
    "paddle.framework": "minifluid.compat.paddle_framework",
    "paddle.framework.random": "minifluid.compat.paddle_framework.random",
    "paddle.compat": "minifluid.compat.paddle_compat",
    "paddle.version": "minifluid.version",
}

# legacy version checks (`paddle.__version__ >= "1.6"`) see the fluid level minifluid emulates
_VERSIONED = ("paddle", "paddle.fluid")

def unsupported(module_name, attr):
    """The error for ``module_name.attr`` missing: a written replacement, or the API family (hints.py)."""
    return UnsupportedAPIError(hint(f"{module_name}.{attr}"))


class _ProxyModule(types.ModuleType):
    """``paddle.*`` view of a minifluid module: same attributes, clear errors for missing ones."""

    def __init__(self, name, target):
        super().__init__(name, getattr(target, "__doc__", None))
        object.__setattr__(self, "_target", target)
        self.__path__ = []  # a package, so submodules import through the finder
        if name in _VERSIONED:
            self.__version__ = _FLUID_VERSION

    def __getattr__(self, attr):
        if attr == "__all__":  # ``from paddle.io import *`` binds the module's public names
            target = object.__getattribute__(self, "_target")
            return list(getattr(target, "__all__", None) or [n for n in dir(target) if not n.startswith("_")])
        if attr.startswith("__"):
            raise AttributeError(attr)
        sub = f"{self.__name__}.{attr}"
        target = object.__getattribute__(self, "_target")
        if sub in MODULE_MAP and not _shadowed(target, attr):  # paddle.fluid.layers is the proxy too, so its
            return importlib.import_module(sub)                # missing names get clear errors
        try:
            return getattr(target, attr)
        except AttributeError:
            pass
        raise unsupported(self.__name__, attr)

    def __dir__(self):
        return dir(object.__getattribute__(self, "_target"))

    # NOTE [ assignments reach minifluid ]: a script's ``paddle.dataset.common.DATA_HOME = path`` (or
    # ``fluid.x = y``) must change what minifluid reads, so a name is set on (deleted from) the module
    # behind the proxy. Dunders (the import system's __spec__, __path__ ...) and submodules (the finder
    # binds each child proxy to its parent) stay on the proxy.
    def __setattr__(self, attr, value):
        if isinstance(value, types.ModuleType) and _shadowed(object.__getattribute__(self, "_target"), attr):
            return  # the import system binds a loaded submodule to its parent: fluid.layers.rnn stays the function
        if attr.startswith("__") or isinstance(value, types.ModuleType):
            super().__setattr__(attr, value)
        else:
            setattr(object.__getattribute__(self, "_target"), attr, value)

    def __delattr__(self, attr):
        if attr.startswith("__") or attr in self.__dict__:
            super().__delattr__(attr)
        else:
            delattr(object.__getattribute__(self, "_target"), attr)


class _Loader(importlib.abc.Loader):
    def create_module(self, spec):
        return _ProxyModule(spec.name, importlib.import_module(MODULE_MAP[spec.name]))

    def exec_module(self, module):
        parent, _, child = module.__name__.rpartition(".")
        if parent and parent in sys.modules:
            setattr(sys.modules[parent], child, module)


def _shadowed(target, name):
    """The module behind a proxy has a non-module attribute ``name`` (``fluid.layers.rnn``, a function named
    like fluid's layers/rnn.py): the attribute wins over the submodule, as in fluid."""
    value = getattr(target, name, None) if target is not None else None
    return value is not None and not isinstance(value, types.ModuleType)


class _Finder(importlib.abc.MetaPathFinder):
    """Answers imports of ``paddle`` and its submodules."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "paddle" and not fullname.startswith("paddle."):
            return None
        if fullname not in MODULE_MAP:
            raise UnsupportedModuleError(hint(fullname))
        return importlib.util.spec_from_loader(fullname, _Loader(), is_package=True)


_finder = None


def installed():
    return _finder is not None


def install():
    """Make ``import paddle`` / ``paddle.fluid`` / … resolve to minifluid in this interpreter."""
    global _finder
    if _finder is None:
        _finder = _Finder()
        sys.meta_path.insert(0, _finder)
    return _finder


def uninstall():
    """Remove the finder and every ``paddle`` module it created."""
    global _finder
    if _finder is not None:
        sys.meta_path.remove(_finder)
        _finder = None
    for name in [n for n in sys.modules if n == "paddle" or n.startswith("paddle.")]:
        del sys.modules[name]


def supported_api():
    """{paddle module: sorted public names} for every mapped module that imports: the README table."""
    table = {}
    for name, target in sorted(MODULE_MAP.items()):
        try:
            module = importlib.import_module(target)
        except ImportError:
            continue
        public = getattr(module, "__all__", None) or [n for n in dir(module) if not n.startswith("_")]
        table[name] = sorted(public)
    return table
