"""ParamAttr: how a layer creates one parameter (name, initializer, learning rate, regularizer ...)."""
from .initializer import Constant, Initializer, Xavier
from .regularizer import WeightDecayRegularizer

__all__ = ["ParamAttr", "WeightNormParamAttr"]


class ParamAttr:
    """Settings for a parameter that a layer creates.

    Args:
        name (str, optional): the parameter's name; default ``<layer>_<n>.w_<k>`` / ``.b_<k>``.
        initializer (Initializer, optional): default Xavier for weights, Constant(0.0) for biases.
        learning_rate (float): multiplies the optimizer's learning rate for this parameter.
        regularizer (WeightDecayRegularizer, optional): overrides the optimizer's regularization.
        trainable (bool): False keeps the parameter out of backward and the optimizer.
        gradient_clip: a ``fluid.clip`` object applied to this parameter's gradient.
        do_model_average (bool): False leaves the parameter out of ModelAverage / ExponentialMovingAverage.
    """

    def __init__(self, name=None, initializer=None, learning_rate=1.0, regularizer=None, trainable=True,
                 gradient_clip=None, do_model_average=True):
        if name is not None and not isinstance(name, str):
            raise TypeError(f"ParamAttr name must be a str, got {type(name).__name__}")
        if initializer is not None and not isinstance(initializer, Initializer):
            raise TypeError(f"ParamAttr initializer must be an Initializer, got {type(initializer).__name__}")
        self.name = name
        self.initializer = initializer
        self.learning_rate = learning_rate
        self.regularizer = regularizer
        self.trainable = trainable
        self.gradient_clip = gradient_clip
        self.do_model_average = do_model_average

    def _set_default_initializer(self, initializer):
        if self.initializer is None:
            self.initializer = initializer

    def _set_default_param_initializer(self):
        self._set_default_initializer(Xavier())

    def _set_default_bias_initializer(self):
        self._set_default_initializer(Constant(0.0))

    @staticmethod
    def _to_attr(arg):
        """Normalise what layers accept as ``param_attr``: None, str, ParamAttr, Initializer,
        regularizer, False (no parameter) or a list of those."""
        if arg is None:
            return ParamAttr()
        if isinstance(arg, (list, tuple)):
            return [ParamAttr._to_attr(a) for a in arg]
        if isinstance(arg, ParamAttr):
            return arg
        if isinstance(arg, str):
            return ParamAttr(name=arg)
        if isinstance(arg, Initializer):
            return ParamAttr(initializer=arg)
        if isinstance(arg, WeightDecayRegularizer):
            return ParamAttr(regularizer=arg)
        if arg is False:
            return False
        if arg is True:
            return ParamAttr()
        raise TypeError(f"{type(arg).__name__} cast to ParamAttr")

    def _to_kwargs(self, with_initializer=False):
        kwargs = {"name": self.name, "optimize_attr": {"learning_rate": self.learning_rate},
                  "regularizer": self.regularizer, "trainable": self.trainable,
                  "gradient_clip_attr": self.gradient_clip, "do_model_average": self.do_model_average}
        if with_initializer:
            kwargs["initializer"] = self.initializer
        return kwargs

    def __repr__(self):
        return (f"ParamAttr(name={self.name!r}, initializer={self.initializer!r}, "
                f"learning_rate={self.learning_rate}, regularizer={self.regularizer!r}, trainable={self.trainable})")


class WeightNormParamAttr(ParamAttr):
    """A weight-normalised parameter (Salimans & Kingma 2016): the layer gets ``w = g * v / ||v||``, computed
    in the main program from two parameters ``<name>_g`` and ``<name>_v`` (layers/weight_norm.py). The norm
    runs over every axis but ``dim`` (None: over all axes, ``g`` a scalar); ``v`` starts from ``initializer``
    and ``g`` from ``||v||``, so ``w`` starts as ``initializer`` would have made it."""

    params_with_weight_norm = []

    def __init__(self, dim=None, name=None, initializer=None, learning_rate=1.0, regularizer=None, trainable=True,
                 do_model_average=False):
        super().__init__(name=name, initializer=initializer, learning_rate=learning_rate, regularizer=regularizer,
                         trainable=trainable, do_model_average=do_model_average)
        if dim is not None and (not isinstance(dim, int) or isinstance(dim, bool)):
            raise TypeError(f"WeightNormParamAttr dim must be None or an int, got {type(dim).__name__}")
        self.dim = dim
