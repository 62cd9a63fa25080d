"""``fluid.dygraph.grad`` (1.8): the gradients of some outputs with respect to some inputs, now.

It walks the same tape as ``backward()`` (NOTE [ Eager autograd ] in tracer.py) from every output at once,
seeded with ``grad_outputs`` (ones where None), and collects the gradient arriving at each input, leaf or
not, while it keeps flowing on (an input may feed another). Nothing accumulates into leaves' ``_grad``:
``x.gradient()`` is untouched. ``no_grad_vars`` stop the flow. The results are new tensors outside the
graph: ``create_graph=True`` (gradients that are themselves differentiable, for higher orders) would need a
taped backward, which minifluid does not have, and raises NotImplementedError.
"""
from ..ops.registry import array_module
from .tensor import Tensor
from .tracer import RELEASED_MESSAGE, _add, _reachable, propagate

__all__ = ["grad"]


def _tensors(value, name):
    """``value`` (a Tensor or a non-empty list / tuple of Tensors) as a list."""
    assert value is not None, f"{name} should not be None"
    if isinstance(value, (list, tuple)):
        assert len(value) > 0, f"{name} cannot be empty"
        for v in value:
            assert isinstance(v, Tensor), f"Elements of {name} must be Variable"
        return list(value)
    assert isinstance(value, Tensor), f"{name} must be Variable or list of Variable"
    return [value]


def _seeds(outputs, grad_outputs):
    if grad_outputs is None:
        grad_outputs = [None] * len(outputs)
    elif not isinstance(grad_outputs, (list, tuple)):
        grad_outputs = [grad_outputs]
    assert len(grad_outputs) == len(outputs), "The length of grad_outputs must be equal to outputs"
    seeds = []
    for out, g in zip(outputs, grad_outputs):
        assert g is None or isinstance(g, Tensor), \
            "grad_outputs must be None, a Variable or a list containing None or Variables"
        if g is None:
            seeds.append(array_module(out._value).ones_like(out._value))
            continue
        if list(g.shape) != list(out.shape):
            raise ValueError(f"grad_outputs: the gradient of an output of shape {list(out.shape)} has shape "
                             f"{list(g.shape)}")
        seeds.append(g._value.astype(out._value.dtype, copy=False))
    return seeds


def _no_grad_ids(no_grad_vars):
    if no_grad_vars is None:
        return set()
    if isinstance(no_grad_vars, Tensor):
        return {id(no_grad_vars)}
    if isinstance(no_grad_vars, (list, tuple, set)):
        for v in no_grad_vars:
            assert isinstance(v, Tensor), "no_grad_vars can only contains Variable"
        return {id(v) for v in no_grad_vars}
    raise AssertionError("no_grad_vars must be None, Variable or list/tuple/set of Variables")


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, only_inputs=True,
         allow_unused=False, no_grad_vars=None, backward_strategy=None):
    """The sum of the gradients of ``outputs`` with respect to each of ``inputs``, as a tuple of tensors
    (None for an input the outputs do not depend on, when ``allow_unused``).

    Args:
        outputs, inputs (Tensor or list of Tensors). grad_outputs (Tensor or list of Tensor / None, optional):
        the outputs' initial gradients (ones where None). retain_graph (bool, default ``create_graph``): keep
        the graph for a later ``backward()`` / ``grad``. no_grad_vars (Tensor or list / tuple / set): where
        gradients stop. only_inputs must be True, create_graph False.

    Raises:
        NotImplementedError: ``create_graph=True``. ValueError: an input the outputs do not depend on, unless
        ``allow_unused``. RuntimeError: the graph was released by an earlier backward.
    """
    outputs, inputs = _tensors(outputs, "outputs"), _tensors(inputs, "inputs")
    seeds = _seeds(outputs, grad_outputs)
    stopped = _no_grad_ids(no_grad_vars)
    assert isinstance(create_graph, bool), "create_graph must be True or False"
    if create_graph:
        raise NotImplementedError("fluid.dygraph.grad(create_graph=True) is not supported by minifluid: its "
                                  "gradients are not differentiable again (no higher-order gradients in dygraph)")
    retain_graph = create_graph if retain_graph is None else retain_graph
    assert isinstance(retain_graph, bool), "retain_graph must be None, True or False"
    assert isinstance(allow_unused, bool), "allow_unused must be True or False"
    assert isinstance(only_inputs, bool), "only_inputs must be True or False"
    assert only_inputs, "only_inputs=False is not supported yet"

    wanted = {id(t): i for i, t in enumerate(inputs)}
    found = [None] * len(inputs)

    def route(t, g, pending):
        if t.stop_gradient or id(t) in stopped:
            return
        k = wanted.get(id(t))
        if k is not None:
            g = g.astype(t._value.dtype) if g.dtype != t._value.dtype else g
            found[k] = g if found[k] is None else found[k] + g
        if t._node is not None:
            _add(pending, t._node, t._slot, t._k, g)

    nodes, pending = set(), {}
    for out, seed in zip(outputs, seeds):
        node = out._node
        if node is not None and node.ins is None:
            raise RuntimeError(RELEASED_MESSAGE)
        if node is not None and id(out) not in stopped:
            nodes.update(_reachable(node))
        route(out, seed, pending)
    propagate(sorted(nodes, key=lambda n: n.seq, reverse=True), pending, route, retain_graph)
    for k, g in enumerate(found):
        if g is None and not allow_unused:
            raise ValueError(f"The {k}-th input does not appear in the backward graph. Please check the input "
                             "variable or set allow_unused=True.")
    return tuple(None if g is None else Tensor(g) for g in found)
