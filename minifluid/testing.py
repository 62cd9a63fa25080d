"""check_op: run one op through a Program, compare with a numpy reference, then check its gradient.

The forward runs exactly as users run it (Program + Executor + a fresh Scope), and the
inferred output shapes/dtypes are checked against what the kernel produced (also with a
-1 leading dim, as layers build them). The gradient check calls the registered grad kernel
with a random upstream gradient ``dout`` for ``loss = sum(out * dout)`` and compares it with
central differences of the forward kernel in float64.

LoD: an input given as a LoDTensor is fed with its LoD (its variable gets that ``lod_level``), and a
context kernel (LoD ops) is called directly with a ``KernelContext`` holding the inputs' LoD, so the
gradient check differentiates over uneven sequences too. ``output_lods`` states the expected LoD of
outputs; every output is then fetched as a LoDTensor and its LoD compared.
"""
import numpy as np

from .dtypes import convert_dtype, is_float_dtype
from .executor import Executor, Scope
from .framework import Program
from .lod_tensor import LoDTensor
from .ops.registry import get_op_spec

__all__ = ["check_op", "AUX_OUTPUTS", "KernelContext", "call_kernel", "call_grad"]

AUX_OUTPUTS = frozenset({"XShape", "ReserveSpace"})  # bookkeeping outputs: never compared or differentiated


def _as_tuple(result, n):
    return (result,) if n == 1 else tuple(result)


def _listify(value, duplicable):
    return list(value) if duplicable else [value]


class KernelContext:
    """What a context kernel sees (executor/context.py's ExecutionContext), for calling one directly:
    the inputs' LoD by (slot, index); the LoD the kernel sets lands in ``out_lods`` by (slot, index)."""

    def __init__(self, attrs, lods=None):
        self.attrs, self.lods, self.out_lods = attrs, dict(lods or {}), {}
        self.random, self.place = np.random, None

    def input_lod(self, slot, index=0):
        return self.lods.get((slot, index)) or []

    def set_output_lod(self, slot, lod, index=0):
        self.out_lods[(slot, index)] = [list(level) for level in lod] if lod else []


def call_kernel(spec, attrs, args, lods=None):
    """``spec``'s forward kernel on ``args`` (one per input slot); a context kernel gets a KernelContext."""
    return spec.kernel(KernelContext(attrs, lods), attrs, *args) if spec.context else spec.kernel(attrs, *args)


def call_grad(spec, attrs, ins, outs, douts, need, lods=None):
    """``spec``'s grad kernel (module docstring of ops/registry.py); a context op's gets a KernelContext."""
    if spec.context:
        return spec.grad(KernelContext(attrs, lods), attrs, ins, outs, douts, need)
    return spec.grad(attrs, ins, outs, douts, need)


def _run_kernel(spec, attrs, inputs, lods=None):
    args = [inputs.get(slot) for slot in spec.inputs]
    return dict(zip(spec.outputs, _as_tuple(call_kernel(spec, attrs, args, lods), len(spec.outputs))))


def _build_program(spec, attrs, inputs, produced, batch_unknown=False, lods=None):
    """A one-op Program; returns (program, feed dict, {slot: [output var names]})."""
    prog = Program()
    block = prog.global_block()
    feed, ins, outs = {}, {}, {}
    for slot, value in inputs.items():
        names = []
        for i, arr in enumerate(_listify(value, slot in spec.duplicable)):
            name = f"{slot}_{i}"
            shape = tuple(arr.shape)
            if batch_unknown and shape and shape[0] > 1:  # a size-1 lead dim may be squeezed: keep it
                shape = (-1,) + shape[1:]
            lod = (lods or {}).get((slot, i))
            block.create_var(name=name, shape=shape, dtype=convert_dtype(arr.dtype), lod_level=len(lod or ()))
            feed[name] = LoDTensor(arr, lod) if lod else arr
            names.append(name)
        ins[slot] = names
    for slot, value in produced.items():
        outs[slot] = [f"out_{slot}_{i}" for i in range(len(_listify(value, slot in spec.duplicable)))]
        for name in outs[slot]:
            block.create_var(name=name, shape=None, dtype=None)
    block.append_op(type=spec.type, inputs=ins, outputs=outs, attrs=attrs)
    return prog, feed, outs


# ops whose output size depends on their inputs' values
VALUE_SIZED = ("range", "where_index", "linspace", "unique", "unique_with_counts", "affine_grid")


def _check_inferred(op_type, block, out_names, results, batch_unknown):
    for name, value in zip(out_names, results):
        var = block.var(name)
        if var.shape is None or value is None:
            continue
        shape = tuple(value.shape)
        ok = len(var.shape) == len(shape) and all(v == s or (batch_unknown and v == -1)
                                                  for v, s in zip(var.shape, shape))
        assert ok, (f"{op_type}: infer_shape gives {var.shape} for output {name}, kernel produced {shape}"
                    f"{' (inputs with a -1 leading dim)' if batch_unknown else ''}")
        assert var.dtype == convert_dtype(value.dtype), (
            f"{op_type}: infer_shape gives dtype {var.dtype} for output {name}, kernel produced {value.dtype}")


def _compare(op_type, what, got, expected, atol, rtol):
    got, expected = np.asarray(got), np.asarray(expected)
    assert got.shape == expected.shape, f"{op_type}: {what} has shape {got.shape}, expected {expected.shape}"
    bad = ~np.isclose(got, expected, atol=atol, rtol=rtol, equal_nan=True)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        received, wanted = got.reshape(-1)[i].item(), expected.reshape(-1)[i].item()
        raise AssertionError(f"{op_type}: {what} mismatch at flat index {i} ({int(bad.sum())} of {bad.size} "
                             f"elements): received {received!r}, expected {wanted!r}")


def _check_lods(op_type, names, results, expected_lods):
    """The fetched LoDTensors carry the expected LoD (``expected_lods``: output name -> lengths)."""
    for name, value in zip(names, results):
        if name in expected_lods:
            got, want = value.recursive_sequence_lengths(), [list(level) for level in expected_lods[name]]
            assert got == want, f"{op_type}: output {name} has LoD {got}, expected {want}"


def _forward(spec, attrs, inputs, produced, reference, atol, rtol, lods=None, output_lods=None):
    """Run the op in a Program, check infer_shape, LoD and the reference; returns the fetched outputs."""
    fetched = {}
    as_lod = bool(lods) or output_lods is not None
    for batch_unknown in (False, True):
        prog, feed, outs = _build_program(spec, attrs, inputs, produced, batch_unknown, lods)
        names = [n for slot in produced for n in outs[slot]]
        results = Executor().run(prog, feed=feed, fetch_list=names, scope=Scope(), return_numpy=not as_lod)
        if as_lod:
            expected = {n: lod for slot, lod in (output_lods or {}).items() for n in outs[slot][:1]}
            _check_lods(spec.type, names, results, expected)
            results = [np.asarray(r) for r in results]
        # a context (LoD) op's output rows follow the LoD, and a VALUE_SIZED op's the input values: unknown (-1)
        # while building, as in fluid
        _check_inferred(spec.type, prog.global_block(), names, results,
                        batch_unknown or spec.context or spec.type in VALUE_SIZED)
    it = iter(results)
    for slot, value in produced.items():
        got = [next(it) for _ in _listify(value, slot in spec.duplicable)]
        fetched[slot] = got if slot in spec.duplicable else got[0]
    if reference is None:
        return fetched
    expected = reference(**inputs)
    if not isinstance(expected, dict):
        slots = [s for s in produced if s not in AUX_OUTPUTS]
        expected = dict(zip(slots, expected if isinstance(expected, tuple) else (expected,)))
    for slot, exp in expected.items():
        dup = slot in spec.duplicable
        got, exp = _listify(fetched[slot], dup), _listify(exp, dup)
        assert len(got) == len(exp), f"{spec.type}: output {slot} has {len(got)} tensors, expected {len(exp)}"
        for i, (g, e) in enumerate(zip(got, exp)):
            _compare(spec.type, f"output {slot}{f'[{i}]' if dup else ''}", g, e, atol, rtol)
    return fetched


def _loss(spec, attrs, inputs, douts, lods=None):
    outs = _run_kernel(spec, attrs, inputs, lods)
    return sum(float((np.asarray(o, dtype=np.float64) * d).sum())
               for slot, ds in douts.items() for o, d in zip(_listify(outs[slot], slot in spec.duplicable),
                                                              _listify(ds, slot in spec.duplicable)))


def _numeric_grad(spec, attrs, inputs, douts, slot, k, eps, lods=None):
    """Central differences of the loss w.r.t. array ``k`` of input ``slot``."""
    arrays = _listify(inputs[slot], slot in spec.duplicable)
    base = arrays[k]
    grad = np.zeros(base.shape, dtype=np.float64)
    flat, gflat = base.reshape(-1), grad.reshape(-1)
    for i in range(flat.size):
        saved = flat[i]
        values = []
        for delta in (eps, -eps):
            flat[i] = saved + delta
            values.append(_loss(spec, attrs, inputs, douts, lods))
        flat[i] = saved
        gflat[i] = (values[0] - values[1]) / (2 * eps)
    return grad


def _check_grads(spec, attrs, inputs, grad_inputs, grad_outputs, eps, atol, rtol, rng, lods=None):
    outs = _run_kernel(spec, attrs, inputs, lods)
    douts = {}
    for slot in grad_outputs:
        values = _listify(outs[slot], slot in spec.duplicable)
        ds = [rng.standard_normal(np.shape(v)) for v in values]
        douts[slot] = ds if slot in spec.duplicable else ds[0]
    need = tuple(slot in grad_inputs for slot in spec.inputs)
    analytic = call_grad(spec, attrs, tuple(inputs.get(s) for s in spec.inputs),
                         tuple(outs.get(s) for s in spec.outputs), tuple(douts.get(s) for s in spec.outputs), need, lods)
    for slot, got in zip(spec.inputs, analytic):
        if slot not in grad_inputs:
            continue
        assert got is not None, f"{spec.type}: grad kernel returned None for needed input {slot}"
        dup = slot in spec.duplicable
        for k, g in enumerate(_listify(got, dup)):
            expected = _numeric_grad(spec, attrs, inputs, douts, slot, k, eps, lods)
            _compare(spec.type, f"gradient of input {slot}{f'[{k}]' if dup else ''}", g, expected, atol, rtol)


def check_op(op_type, inputs, attrs=None, outputs=None, reference=None, grad_inputs=None, grad_outputs=None,
             eps=1e-6, atol=1e-6, rtol=1e-5, seed=0, output_lods=None):
    """Check op ``op_type``'s forward against ``reference`` and its gradient against central differences.

    inputs: slot -> ndarray or LoDTensor (a list for a duplicable slot); float inputs should be float64.
    output_lods: slot -> the LoD (recursive sequence lengths) the output must carry.
    outputs: output slots to produce (default: every non-aux output the kernel returns).
    reference: ``reference(**inputs)`` -> expected array, tuple (in ``outputs`` order) or dict slot -> array.
    grad_inputs: input slots to differentiate (default: every float input not marked no-grad);
        pass ``()`` to check only the forward. Ops without a registered grad skip the check.
    grad_outputs: output slots that get a random upstream gradient (default: every produced float output).
    """
    spec = get_op_spec(op_type)
    attrs = {**spec.attrs, **(attrs or {})}
    lods = {(slot, i): a.recursive_sequence_lengths() for slot, v in inputs.items()
            for i, a in enumerate(_listify(v, slot in spec.duplicable)) if isinstance(a, LoDTensor) and a._lod}
    inputs = {slot: ([np.array(a) for a in v] if slot in spec.duplicable else np.array(v))
              for slot, v in inputs.items()}
    probe = _run_kernel(spec, attrs, inputs, lods)
    slots = outputs if outputs is not None else [s for s in spec.outputs if s not in AUX_OUTPUTS]
    produced = {s: probe[s] for s in slots if probe[s] is not None}
    fetched = _forward(spec, attrs, inputs, produced, reference, atol, rtol, lods, output_lods)
    if spec.grad is None:
        return fetched

    def is_float(value, dup):
        return all(is_float_dtype(convert_dtype(a.dtype)) for a in _listify(value, dup))
    if grad_inputs is None:
        grad_inputs = [s for s, v in inputs.items()
                       if s not in spec.no_grad_inputs and is_float(v, s in spec.duplicable)]
    if grad_outputs is None:
        grad_outputs = [s for s, v in produced.items() if is_float(v, s in spec.duplicable)]
    if grad_inputs and grad_outputs:
        _check_grads(spec, attrs, inputs, set(grad_inputs), grad_outputs, eps, atol, rtol,
                     np.random.default_rng(seed), lods)
    return fetched
