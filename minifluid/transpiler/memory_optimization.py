"""``fluid.memory_optimize`` / ``fluid.release_memory``: no-ops since fluid 1.6, kept so old scripts run.

minifluid frees each step's temporaries when the step ends; there is nothing for these to rewrite."""
import logging

__all__ = ["memory_optimize", "release_memory"]

_logger = logging.getLogger("minifluid")


def memory_optimize(input_program, skip_opt_set=None, print_log=False, level=0, skip_grads=True):
    """Deprecated (fluid 1.6): logs one warning, changes nothing."""
    _logger.warning(
        "Caution! paddle.fluid.memory_optimize() is deprecated and not maintained any more, since it is not "
        "stable!\nThis API would not take any memory optimizations on your Program now, since we have "
        "provided default strategies for you.")


def release_memory(input_program, skip_opt_set=None):
    """Deprecated (fluid 1.6): logs one warning, changes nothing."""
    _logger.warning("paddle.fluid.release_memory() is deprecated, it would not take any memory release on "
                    "your program")
