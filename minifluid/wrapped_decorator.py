"""``fluid.wrapped_decorator``: decorators that keep the decorated function's signature.

``wrap_decorator(decorator_func)`` turns ``decorator_func`` (function -> wrapped function) into a decorator
whose result reports the original function's name, docstring and signature (``inspect.signature`` follows
``__wrapped__``), the wrapping applied at each call as fluid's does; ``signature_safe_contextmanager`` is
``contextlib.contextmanager`` made so.
"""
import contextlib
import functools

__all__ = ["signature_safe_contextmanager", "wrap_decorator"]


def wrap_decorator(decorator_func):
    def decorate(func):
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            return decorator_func(func)(*args, **kwargs)
        return wrapper
    return decorate


signature_safe_contextmanager = wrap_decorator(contextlib.contextmanager)
