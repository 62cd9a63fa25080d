"""``fluid.dygraph.parallel`` (1.8): ParallelEnv, prepare_context and DataParallel, for one process.

minifluid trains a dygraph model in one process (no NCCL / collective communication between processes):
with ``nranks == 1`` (``PADDLE_TRAINERS_NUM`` unset or 1) ``prepare_context()`` returns None as fluid 1.8
does, and ``DataParallel`` is the wrapped layer: ``scale_loss`` returns the loss unchanged and
``apply_collective_grads`` leaves the gradients alone, which is what fluid 1.8 defines them to do then.
Asking for more ranks is a clear NotImplementedError rather than a silent single-process run.
"""
import os

from .layer import Layer

__all__ = ["DataParallel", "ParallelEnv", "ParallelStrategy", "prepare_context"]


class ParallelEnv:
    """The trainer's place in a data-parallel job, read from the environment as fluid 1.8 reads it:
    ``PADDLE_TRAINERS_NUM`` (nranks, default 1), ``PADDLE_TRAINER_ID`` (local_rank, 0), ``FLAGS_selected_gpus``
    (dev_id, 0), ``PADDLE_TRAINER_ENDPOINTS`` (comma separated) and ``PADDLE_CURRENT_ENDPOINT``."""

    def __init__(self):
        self._nranks = int(os.getenv("PADDLE_TRAINERS_NUM", "1"))
        self._local_rank = int(os.getenv("PADDLE_TRAINER_ID", "0"))
        self._dev_id = int(os.getenv("FLAGS_selected_gpus", "0").split(",")[0])
        self._trainer_endpoints = os.getenv("PADDLE_TRAINER_ENDPOINTS", "").split(",")
        self._current_endpoint = os.getenv("PADDLE_CURRENT_ENDPOINT", "")

    nranks = property(lambda self: self._nranks)
    local_rank = property(lambda self: self._local_rank)
    dev_id = property(lambda self: self._dev_id)
    current_endpoint = property(lambda self: self._current_endpoint)
    trainer_endpoints = property(lambda self: self._trainer_endpoints)


Env = ParallelEnv


class ParallelStrategy:
    """What ``prepare_context`` sets up: nranks, local_rank, trainer_endpoints, current_endpoint."""

    def __init__(self):
        self.nranks, self.local_rank, self.trainer_endpoints, self.current_endpoint = 1, 0, [], ""


def _unsupported(nranks):
    return NotImplementedError(f"multi-process data parallel training (nranks={nranks}) is not supported by "
                               "minifluid: it runs dygraph models in one process (nranks=1)")


def prepare_context(strategy=None):
    """Set up data-parallel training: None (nothing to set up) for a single trainer, as fluid 1.8.

    Raises:
        NotImplementedError: the environment or ``strategy`` asks for two or more ranks.
    """
    if strategy is None:
        env = ParallelEnv()
        strategy = ParallelStrategy()
        strategy.nranks, strategy.local_rank = env.nranks, env.local_rank
        strategy.trainer_endpoints, strategy.current_endpoint = env.trainer_endpoints, env.current_endpoint
    if strategy.nranks < 2:
        return None
    raise _unsupported(strategy.nranks)


class DataParallel(Layer):
    """Wrap ``layers`` (a Layer) for data-parallel training; calls, parameters and state dicts are the wrapped
    layer's (its structured names, unprefixed). ``strategy`` is ``prepare_context()``'s result (None: one
    trainer)."""

    def __init__(self, layers, strategy=None):
        if not isinstance(layers, Layer):
            raise TypeError(f"DataParallel wraps a fluid.dygraph.Layer, but got {type(layers).__name__}")
        super().__init__(layers.full_name() + "_data_parallel")
        nranks = 1 if strategy is None else strategy.nranks
        if nranks > 1:
            raise _unsupported(nranks)
        self._layers = layers
        self._strategy = strategy

    def forward(self, *inputs, **kwargs):
        return self._layers(*inputs, **kwargs)

    def _is_data_parallel_mode(self):
        return self._strategy is not None and self._strategy.nranks > 1

    def scale_loss(self, loss):
        """``loss / nranks`` across trainers; with one trainer, ``loss`` itself."""
        return loss

    def apply_collective_grads(self):
        """All-reduce the gradients across trainers; with one trainer there is nothing to do."""

    def state_dict(self, destination=None, include_sublayers=True, structured_name_prefix=""):
        return self._layers.state_dict(destination, include_sublayers, structured_name_prefix)

    def set_dict(self, stat_dict, include_sublayers=True, use_structured_name=True):
        self._layers.set_dict(stat_dict, include_sublayers, use_structured_name)

    load_dict = set_dict
    set_state_dict = set_dict
