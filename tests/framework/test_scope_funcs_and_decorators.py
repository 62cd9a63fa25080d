"""fluid.default_scope_funcs, fluid.wrapped_decorator and fluid.framework's mode decorators."""
import inspect
import threading

import numpy as np
import pytest

import minifluid as fluid
from minifluid import default_scope_funcs as dsf
from minifluid.framework import dygraph_not_support, dygraph_only
from minifluid.wrapped_decorator import signature_safe_contextmanager, wrap_decorator


def test_local_scopes_stack_per_thread():
    root = dsf.get_cur_scope()
    dsf.var("outer").get_tensor().set(np.ones(2, "float32"), fluid.CPUPlace())
    dsf.enter_local_scope()
    inner = dsf.get_cur_scope()
    assert inner is not root and dsf.find_var("outer") is not None  # found through the parent
    dsf.var("inner")
    assert root.find_var("inner") is None
    dsf.leave_local_scope()
    assert dsf.get_cur_scope() is root
    seen = []
    threading.Thread(target=lambda: seen.append(dsf.get_cur_scope())).start()
    while not seen:
        pass
    assert seen[0] is not root  # each thread has its own stack
    calls = []

    def body():
        calls.append(dsf.get_cur_scope())
        raise KeyError("inside")
    with pytest.raises(KeyError):
        dsf.scoped_function(body)
    assert calls[0] is not root and dsf.get_cur_scope() is root


def test_wrapped_decorators_keep_the_signature():
    def double(func):
        return lambda *a, **k: 2 * func(*a, **k)

    @wrap_decorator(double)
    def add(a, b=1):
        """adds"""
        return a + b
    assert add(3) == 8 and add.__name__ == "add" and add.__doc__ == "adds"
    assert str(inspect.signature(add)) == "(a, b=1)"

    @signature_safe_contextmanager
    def managed(x):
        yield x + 1
    with managed(1) as value:
        assert value == 2
    assert list(inspect.signature(managed).parameters) == ["x"]


def test_mode_decorators_refuse_the_other_mode():
    @dygraph_only
    def eager():
        return "eager"

    @dygraph_not_support
    def static():
        return "static"
    assert static() == "static"
    with pytest.raises(AssertionError, match="eager in imperative mode"):
        eager()
    with fluid.dygraph.guard():
        assert eager() == "eager"
        with pytest.raises(AssertionError, match="don't support static"):
            static()


def test_no_grad_turns_the_tracers_train_mode_off_inside():
    seen = []

    @fluid.dygraph.no_grad
    def inside():
        seen.append(fluid.framework._dygraph_tracer()._train_mode)
    with fluid.dygraph.guard():
        tracer = fluid.framework._dygraph_tracer()
        assert tracer._train_mode is True
        inside()
        tracer._train_mode = False  # fluid's tests switch it by hand
        x = fluid.dygraph.to_variable(np.ones(2, "float32"))
        x.stop_gradient = False
        y = x * 2.0
        assert y.stop_gradient  # nothing recorded while train mode is off
        tracer._train_mode = True
    assert seen == [False]
