"""Optimizers: ``minimize`` = append_backward + clipping + regularization + one update op per parameter.

The learning rate is a persistable ``[1]`` variable (``learning_rate_<n>``) and every accumulator
(``<param>_moment1_<n>``, ``<param>_velocity_<n>`` ...) a persistable variable of the parameter's
shape; all of them are filled by ``fill_constant`` ops in the startup program. Update ops carry
``op_role = OpRole.Optimize`` and update in place (NOTE [ In-place optimizer updates ] in
ops/optimizer.py). A parameter's ``ParamAttr(learning_rate=r)`` adds one ``scale`` op giving it
``r * learning_rate``.

NOTE [ Optimizers in dygraph mode ]
``minimize(loss)`` (fluid 1.8) and ``step()`` (paddle 2.x) take each parameter of ``parameter_list``
that has a gradient (``backward()`` put it there), wrap the gradient as an eager tensor, and run the
*same* code as static mode: ``apply_gradients`` -> clipping, regularization and one update op per
parameter, appended to ``grad.block``. An eager tensor's block runs each op at once through the
tracer, so the update kernels of ops/optimizer.py update the parameters' arrays in place; the
learning rate and the accumulators are eager tensors created once (by the LayerHelper's dygraph
path) and reused on later steps. ``clear_gradients()`` / ``clear_grad()`` drop the gradients.

NOTE [ Learning-rate decays in dygraph ]
A ``fluid.dygraph`` decay (lr_decay.py) as ``learning_rate`` is called once per update for that update's
rate tensor (a step decay advances then); ``current_step_lr``, ``state_dict`` and ``set_dict`` ask it too.
"""
from collections import defaultdict

from ..backward import append_backward
from ..clip import GradientClipBase, append_gradient_clip_ops
from ..framework import dygraph_mode, unique_name
from ..framework.program import default_main_program, default_startup_program, program_guard
from ..framework.variable import Variable
from ..initializer import Constant
from ..layers.helper import LayerHelper
from ..layers.tensor import create_global_var
from ..lr_decay import LearningRateDecay
from ..ops.registry import OpRole
from ..regularizer import append_regularization_ops

__all__ = ["Adagrad", "AdagradOptimizer", "Adam", "AdamOptimizer", "Momentum", "MomentumOptimizer", "Optimizer",
           "RMSProp", "RMSPropOptimizer", "SGD", "SGDOptimizer"]


class Optimizer:
    """Base class; subclasses define ``type``, ``_create_accumulators`` and ``_append_optimize_op``."""

    type = None

    def __init__(self, learning_rate, parameter_list=None, regularization=None, grad_clip=None, name=None):
        if isinstance(learning_rate, LearningRateDecay):  # NOTE [ Learning-rate decays in dygraph ]
            if not dygraph_mode.in_dygraph_mode():
                raise TypeError(f"learning rate should be float or Variable, got {type(learning_rate).__name__}: "
                                "fluid.dygraph's decays work in dygraph mode (use fluid.layers' in a static program)")
        elif not isinstance(learning_rate, (float, int, Variable)) or isinstance(learning_rate, bool):
            raise TypeError(f"learning rate should be float or Variable, got {type(learning_rate).__name__}")
        if grad_clip is not None and not isinstance(grad_clip, GradientClipBase):
            raise TypeError("'grad_clip' should be an instance of GradientClipBase's derived class")
        if parameter_list is not None:
            parameter_list = list(parameter_list)
        elif dygraph_mode.in_dygraph_mode():
            raise AttributeError("parameter_list argument given to the Optimizer should not be None in dygraph mode.")
        self._learning_rate = learning_rate
        self._parameter_list = parameter_list
        self.regularization = regularization
        self._grad_clip = grad_clip
        self._name = name
        self._learning_rate_map = {}
        self._accumulators = defaultdict(dict)
        self.helper = None

    # --- learning rate ---------------------------------------------------------------------------
    def _create_global_learning_rate(self):
        program = default_main_program()
        if isinstance(self._learning_rate, LearningRateDecay):  # each update asks the decay for its rate
            self._learning_rate_map[program] = self._learning_rate()
            return
        if program in self._learning_rate_map:
            return
        if isinstance(self._learning_rate, Variable):
            self._learning_rate_map[program] = self._learning_rate
            return
        self._learning_rate_map[program] = create_global_var(
            name=unique_name.generate("learning_rate"), shape=[1], value=float(self._learning_rate),
            dtype="float32", persistable=True)

    def _global_learning_rate(self, program=None):
        return self._learning_rate_map.get(program if program is not None else default_main_program())

    def _create_param_lr(self, param):
        """The global learning rate, scaled by the parameter's own ``learning_rate`` when not 1."""
        lr = self._global_learning_rate()
        factor = param.optimize_attr.get("learning_rate", 1.0)
        if isinstance(factor, Variable):
            return factor
        if factor == 1.0:
            return lr
        block = default_main_program().global_block()
        out = block.create_var(name=unique_name.generate("learning_rate_scaled"), shape=[1], dtype=lr.dtype)
        block.append_op(type="scale", inputs={"X": [lr]}, outputs={"Out": [out]},
                        attrs={"scale": float(factor), "op_role": OpRole.Optimize})
        return out

    # --- accumulators ---------------------------------------------------------------------------
    def _add_accumulator(self, name, param, dtype=None, fill_value=0.0, shape=None):
        if param.name in self._accumulators[name]:
            if dygraph_mode.in_dygraph_mode():  # created by an earlier step
                return self._accumulators[name][param.name]
            raise ValueError(f"Accumulator {name} already exists for parameter {param.name}")
        var = self.helper.create_global_variable(
            name=unique_name.generate(param.name + "_" + name), persistable=True, stop_gradient=True,
            dtype=dtype or param.dtype, shape=list(shape if shape is not None else param.shape))
        self.helper.set_variable_initializer(var, Constant(value=float(fill_value)))
        self._accumulators[name][param.name] = var
        return var

    def _get_accumulator(self, name, param):
        try:
            return self._accumulators[name][param.name]
        except KeyError:
            raise ValueError(f"Accumulator {name} does not exist for parameter {param.name}") from None

    def _create_accumulators(self, block, parameters):
        pass

    def _append_optimize_op(self, block, param_and_grad):
        raise NotImplementedError

    def _optimize_op(self, block, param, grad, inputs, outputs, attrs, learning_rate=True):
        """Append this optimizer's op for one parameter (Param/Grad/LearningRate filled in here; an op without
        a LearningRate input, such as adadelta's, passes ``learning_rate=False``)."""
        lr = {"LearningRate": [self._create_param_lr(param)]} if learning_rate else {}
        inputs = {"Param": [param], "Grad": [grad], **lr, **inputs}
        outputs = {"ParamOut": [param], **outputs}
        attrs = dict(attrs, op_role=OpRole.Optimize, op_role_var=[param.name, grad.name])
        return block.append_op(type=self.type, inputs=inputs, outputs=outputs, attrs=attrs)

    # --- the public steps ---------------------------------------------------------------------------
    def _create_optimization_pass(self, parameters_and_grads):
        block = default_main_program().current_block()  # inside a cond branch: updates only when it runs
        if dygraph_mode.in_dygraph_mode() and parameters_and_grads:  # NOTE [ Optimizers in dygraph mode ]
            block = parameters_and_grads[0][1].block
        start = len(block.ops)
        self.helper = LayerHelper(self.__class__.__name__)
        trainable = [(p, g) for p, g in parameters_and_grads if g is not None and p.trainable]
        self._create_accumulators(block, [p for p, _ in trainable])
        self._create_global_learning_rate()
        for param_and_grad in trainable:
            self._append_optimize_op(block, param_and_grad)
        return block.ops[start:]

    def backward(self, loss, startup_program=None, parameter_list=None, no_grad_set=None, callbacks=None):
        """append_backward for ``loss``; returns the (param, grad) pairs."""
        parameter_list = parameter_list if parameter_list is not None else self._parameter_list
        return append_backward(loss, parameter_list, no_grad_set, callbacks)

    def apply_gradients(self, params_grads):
        """Clip, regularize, then append the update ops (in the current default programs)."""
        params_grads = sorted(params_grads, key=lambda pg: pg[0].name)
        if self._grad_clip is not None:
            params_grads = self._grad_clip(params_grads)
        else:
            params_grads = append_gradient_clip_ops(params_grads)
        params_grads = append_regularization_ops(params_grads, self.regularization)
        return self._create_optimization_pass(params_grads)

    def apply_optimize(self, loss, startup_program, params_grads):
        with program_guard(loss.block.program, startup_program or default_startup_program()):
            return self.apply_gradients(params_grads)

    def minimize(self, loss, startup_program=None, parameter_list=None, no_grad_set=None):
        """Append backward and update ops for ``loss``; returns ``(optimize_ops, params_grads)``.
        In dygraph mode: update the parameters from their gradients now (call ``loss.backward()`` first)."""
        if dygraph_mode.in_dygraph_mode():
            return self._eager_step(parameter_list)
        if not isinstance(loss, Variable):
            raise TypeError(f"The loss should be a Variable, got {type(loss).__name__}")
        params_grads = self.backward(loss, startup_program, parameter_list, no_grad_set)
        optimize_ops = self.apply_optimize(loss, startup_program, params_grads)
        return optimize_ops, params_grads

    # --- dygraph (NOTE [ Optimizers in dygraph mode ]) ---------------------------------------------------
    def _eager_params(self, parameter_list=None):
        params = parameter_list if parameter_list is not None else self._parameter_list
        if params is None:
            raise AttributeError("parameter_list argument given to the Optimizer should not be None in dygraph mode.")
        return params

    def _eager_step(self, parameter_list=None):
        tracer = dygraph_mode.current_tracer()
        if tracer is None:
            raise RuntimeError("the optimizer updates eager parameters only in dygraph mode (fluid.dygraph.guard())")
        params_grads = []
        for p in self._eager_params(parameter_list):
            if p.trainable and p._grad is not None:
                grad = tracer.eager_tensor(p._grad)
                grad.name = p.name + "@GRAD"
                params_grads.append((p, grad))
        self.apply_gradients(params_grads)
        return [], params_grads

    def step(self):
        """paddle 2.x: update every parameter of ``parameters`` that has a gradient."""
        self._eager_step()

    def clear_gradients(self):
        """Drop the gradients of the optimizer's parameters (``clear_grad`` in paddle 2.x)."""
        for p in self._eager_params():
            p.clear_gradient()

    clear_grad = clear_gradients

    def current_step_lr(self):
        lr = self._learning_rate
        if isinstance(lr, LearningRateDecay):  # the last update's rate (before any: the first one's)
            return lr._current_lr(self._global_learning_rate())
        return float(lr) if isinstance(lr, (int, float)) else float(lr.numpy().reshape(-1)[0])

    def state_dict(self):
        """dygraph: accumulator name -> eager tensor (moments, beta powers ...), and a learning-rate decay's
        state (``"LR_Scheduler"``, ``"global_step"``)."""
        state = {var.name: var for table in self._accumulators.values() for var in table.values()}
        if isinstance(self._learning_rate, LearningRateDecay):
            state.update(self._learning_rate._optimizer_state())
        return state

    def set_dict(self, state_dict):
        """Load accumulators saved by ``state_dict()`` (values: ndarrays or tensors), and the decay's state."""
        if isinstance(self._learning_rate, LearningRateDecay):
            self._learning_rate._load_optimizer_state(state_dict)
        for var in (var for table in self._accumulators.values() for var in table.values()):
            if var.name in state_dict:
                var.set_value(state_dict[var.name])

    set_state_dict = set_dict


class SGDOptimizer(Optimizer):
    """``param -= lr * grad``."""

    type = "sgd"

    def _append_optimize_op(self, block, param_and_grad):
        param, grad = param_and_grad
        return self._optimize_op(block, param, grad, {}, {}, {})


class MomentumOptimizer(Optimizer):
    """``v = mu * v + grad``; ``param -= lr * v`` (Nesterov: ``param -= lr * (grad + mu * v)``)."""

    type = "momentum"
    _velocity_acc_str = "velocity"

    def __init__(self, learning_rate, momentum, parameter_list=None, use_nesterov=False, regularization=None,
                 grad_clip=None, name=None):
        super().__init__(learning_rate, parameter_list, regularization, grad_clip, name)
        self._momentum = float(momentum)
        self._use_nesterov = bool(use_nesterov)

    def _create_accumulators(self, block, parameters):
        for p in parameters:
            self._add_accumulator("velocity", p)

    def _append_optimize_op(self, block, param_and_grad):
        param, grad = param_and_grad
        velocity = self._get_accumulator("velocity", param)
        return self._optimize_op(block, param, grad, {"Velocity": [velocity]}, {"VelocityOut": [velocity]},
                                 self._op_attrs())

    def _op_attrs(self):
        return {"mu": self._momentum, "use_nesterov": self._use_nesterov}


class AdamOptimizer(Optimizer):
    """Adam with fluid's bias correction (epsilon scaled by sqrt(1 - beta2^t)); ``lazy_mode`` is ignored."""

    type = "adam"
    _moment1_acc_str, _moment2_acc_str = "moment1", "moment2"
    _beta1_pow_acc_str, _beta2_pow_acc_str = "beta1_pow_acc", "beta2_pow_acc"

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8, parameter_list=None,
                 regularization=None, grad_clip=None, name=None, lazy_mode=False):
        super().__init__(learning_rate, parameter_list, regularization, grad_clip, name)
        self._beta1, self._beta2 = (b if isinstance(b, Variable) else float(b) for b in (beta1, beta2))
        self._epsilon, self._lazy_mode = float(epsilon), lazy_mode

    def _create_accumulators(self, block, parameters):
        # a beta given as a Variable starts its power at fluid's default beta (0.9 / 0.999), as fluid's does
        b1 = 0.9 if isinstance(self._beta1, Variable) else self._beta1
        b2 = 0.999 if isinstance(self._beta2, Variable) else self._beta2
        for p in parameters:
            self._add_accumulator("moment1", p)
            self._add_accumulator("moment2", p)
            self._add_accumulator("beta1_pow_acc", p, fill_value=b1, shape=[1])
            self._add_accumulator("beta2_pow_acc", p, fill_value=b2, shape=[1])

    def _append_optimize_op(self, block, param_and_grad):
        param, grad = param_and_grad
        m1, m2, b1p, b2p = (self._get_accumulator(n, param)
                            for n in ("moment1", "moment2", "beta1_pow_acc", "beta2_pow_acc"))
        inputs = {"Moment1": [m1], "Moment2": [m2], "Beta1Pow": [b1p], "Beta2Pow": [b2p]}
        attrs = {"epsilon": self._epsilon, "lazy_mode": self._lazy_mode}
        for key, slot, beta in (("beta1", "Beta1Tensor", self._beta1), ("beta2", "Beta2Tensor", self._beta2)):
            if isinstance(beta, Variable):
                inputs[slot] = [beta]
            else:
                attrs[key] = beta
        return self._optimize_op(block, param, grad, inputs,
                                 {"Moment1Out": [m1], "Moment2Out": [m2], "Beta1PowOut": [b1p], "Beta2PowOut": [b2p]},
                                 attrs)


class AdagradOptimizer(Optimizer):
    """``m += grad^2``; ``param -= lr * grad / (sqrt(m) + epsilon)``."""

    type = "adagrad"
    _moment_acc_str = "moment"

    def __init__(self, learning_rate, epsilon=1.0e-6, parameter_list=None, regularization=None, grad_clip=None,
                 name=None, initial_accumulator_value=0.0):
        super().__init__(learning_rate, parameter_list, regularization, grad_clip, name)
        self._epsilon = float(epsilon)
        self._initial_accumulator_value = float(initial_accumulator_value)

    def _create_accumulators(self, block, parameters):
        for p in parameters:
            self._add_accumulator("moment", p, fill_value=self._initial_accumulator_value)

    def _append_optimize_op(self, block, param_and_grad):
        param, grad = param_and_grad
        moment = self._get_accumulator("moment", param)
        return self._optimize_op(block, param, grad, {"Moment": [moment]}, {"MomentOut": [moment]},
                                 self._op_attrs())

    def _op_attrs(self):
        return {"epsilon": self._epsilon}


class RMSPropOptimizer(Optimizer):
    """RMSProp with optional momentum and centering (fluid's formulation)."""

    type = "rmsprop"
    _momentum_acc_str, _mean_square_acc_str, _mean_grad_acc_str = "momentum", "mean_square", "mean_grad"

    def __init__(self, learning_rate, rho=0.95, epsilon=1.0e-6, momentum=0.0, centered=False, parameter_list=None,
                 regularization=None, grad_clip=None, name=None):
        super().__init__(learning_rate, parameter_list, regularization, grad_clip, name)
        if rho is None or epsilon is None or momentum is None:
            raise ValueError("rho, epsilon and momentum must not be None")
        self._rho, self._epsilon, self._momentum = float(rho), float(epsilon), float(momentum)
        self._centered = bool(centered)

    def _create_accumulators(self, block, parameters):
        for p in parameters:
            self._add_accumulator("momentum", p)
            self._add_accumulator("mean_square", p)
            self._add_accumulator("mean_grad", p)

    def _append_optimize_op(self, block, param_and_grad):
        param, grad = param_and_grad
        mom, ms, mg = (self._get_accumulator(n, param) for n in ("momentum", "mean_square", "mean_grad"))
        return self._optimize_op(
            block, param, grad, {"Moment": [mom], "MeanSquare": [ms], "MeanGrad": [mg]},
            {"MomentOut": [mom], "MeanSquareOut": [ms], "MeanGradOut": [mg]},
            {"decay": self._rho, "epsilon": self._epsilon, "momentum": self._momentum, "centered": self._centered})


SGD = SGDOptimizer
Momentum = MomentumOptimizer
Adam = AdamOptimizer
Adagrad = AdagradOptimizer
RMSProp = RMSPropOptimizer

