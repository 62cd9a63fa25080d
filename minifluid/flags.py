"""fluid's flags (``core.globals()``, ``fluid.set_flags`` / ``get_flags``).

A flag lives in the environment variable of its name, as fluid's ``FLAGS_*`` are read from the
environment: setting one here sets that variable for this process, and the code that uses it reads it
where it looks: ``FLAGS_selected_gpus`` in ``fluid.cuda_places()``, ``FLAGS_reader_queue_speed_test_mode``
when a loader builds its queue. fluid 1.8's other public flags (memory allocation, eager deletion,
threads, cuDNN tuning...) are accepted and read back so that scripts setting them run, but they change
nothing in minifluid (``ACCEPTED``). Any other name is the ValueError fluid gives for a non-public flag.
"""
import os

__all__ = ["ACCEPTED", "HONOURED", "FlagRegistry", "get_flags", "set_flags"]

_TRUE = ("1", "true")  # as data/queue.py reads FLAGS_reader_queue_speed_test_mode

HONOURED = {
    "FLAGS_reader_queue_speed_test_mode": (bool, False),
    "FLAGS_selected_gpus": (str, ""),
}
"""name -> (type, default): the flags minifluid acts on."""

ACCEPTED = {
    "FLAGS_eager_delete_tensor_gb": (float, 0.0), "FLAGS_enable_parallel_graph": (bool, False),
    "FLAGS_allocator_strategy": (str, "auto_growth"), "FLAGS_use_system_allocator": (bool, False),
    "FLAGS_check_nan_inf": (bool, False), "FLAGS_cpu_deterministic": (bool, False),
    "FLAGS_enable_rpc_profiler": (bool, False), "FLAGS_multiple_of_cupti_buffer_size": (int, 1),
    "FLAGS_pe_profile_fname": (str, ""), "FLAGS_print_sub_graph_dir": (str, ""),
    "FLAGS_fraction_of_cpu_memory_to_use": (float, 1.0), "FLAGS_fuse_parameter_groups_size": (int, 1),
    "FLAGS_fuse_parameter_memory_size": (float, -1.0), "FLAGS_init_allocated_mem": (bool, False),
    "FLAGS_initial_cpu_memory_in_mb": (int, 500), "FLAGS_memory_fraction_of_eager_deletion": (float, 1.0),
    "FLAGS_use_pinned_memory": (bool, True), "FLAGS_benchmark": (bool, False),
    "FLAGS_inner_op_parallelism": (int, 0), "FLAGS_tracer_profile_fname": (str, "xxgperf"),
    "FLAGS_paddle_num_threads": (int, 1), "FLAGS_gpu_memory_limit_mb": (int, 0),
    "FLAGS_cudnn_deterministic": (bool, False), "FLAGS_conv_workspace_size_limit": (int, 512),
    "FLAGS_cudnn_batchnorm_spatial_persistent": (bool, False), "FLAGS_cudnn_exhaustive_search": (bool, False),
    "FLAGS_eager_delete_scope": (bool, True), "FLAGS_fast_eager_deletion_mode": (bool, True),
    "FLAGS_fraction_of_cuda_pinned_memory_to_use": (float, 0.5),
    "FLAGS_fraction_of_gpu_memory_to_use": (float, 0.92), "FLAGS_initial_gpu_memory_in_mb": (int, 0),
    "FLAGS_reallocate_gpu_memory_in_mb": (int, 0), "FLAGS_enable_cublas_tensor_op_math": (bool, False),
    "FLAGS_sync_nccl_allreduce": (bool, True),
}
"""name -> (type, default): fluid 1.8's other public flags, kept but without effect here."""

INTERNAL = {"FLAGS_use_mkldnn": (bool, False)}
"""name -> (type, default): flags fluid keeps off the public list; ``core.globals()`` reads and sets them
(Paddle's op tests read FLAGS_use_mkldnn there), ``set_flags`` refuses them as fluid does."""

FLAGS = {**HONOURED, **ACCEPTED}


class FlagRegistry:
    """What ``core.globals()`` returns: ``registry[name]`` reads a flag, ``registry[name] = value`` sets it."""

    def is_public(self, name):
        return name in FLAGS

    def __contains__(self, name):
        return name in FLAGS

    def keys(self):
        return list(FLAGS)

    def __getitem__(self, name):
        kind, default = self._spec(name)
        raw = os.environ.get(name)
        if raw is None:
            return default
        if kind is bool:
            return raw.strip().lower() in _TRUE
        try:
            return kind(raw)
        except ValueError:
            raise ValueError(f"environment variable {name}={raw!r} is not a valid {kind.__name__}") from None

    def __setitem__(self, name, value):
        kind, _ = self._spec(name)
        if kind is str:
            os.environ[name] = ",".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value)
            return
        numeric = (bool, int) if kind is not float else (bool, int, float)
        if not isinstance(value, numeric) or (kind is not bool and isinstance(value, bool)):
            raise TypeError(f"{name} takes a {kind.__name__}, got {value!r}")
        os.environ[name] = ("1" if value else "0") if kind is bool else repr(kind(value))

    @staticmethod
    def _spec(name):
        spec = FLAGS.get(name) or INTERNAL.get(name)
        if spec is None:
            raise KeyError(f"{name} is not a public flag; the public ones are {sorted(FLAGS)}")
        return spec


_registry = FlagRegistry()


def registry():
    """fluid's ``core.globals()``."""
    return _registry


def set_flags(flags):
    """``fluid.set_flags({name: value, ...})``: set public flags (see this module's docstring)."""
    if not isinstance(flags, dict):
        raise TypeError("flags in set_flags should be a dict")
    for name, value in flags.items():
        if not _registry.is_public(name):
            raise ValueError(f"Flag {name} cannot set its value through this function.")
        _registry[name] = value


def get_flags(flags):
    """``fluid.get_flags(name or [names])`` -> ``{name: value}``."""
    if isinstance(flags, str):
        flags = [flags]
    elif not isinstance(flags, (list, tuple)):
        raise TypeError("Flags in get_flags should be a list, tuple or string.")
    values = {}
    for name in flags:
        if not _registry.is_public(name):
            raise ValueError(f"Flag {name} cannot get its value through this function.")
        values[name] = _registry[name]
    return values
