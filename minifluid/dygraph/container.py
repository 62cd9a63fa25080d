"""``fluid.dygraph.container``: Sequential, LayerList and ParameterList.

Each container registers what it holds under its position (``"0"``, ``"1"`` ...) or, for
``Sequential(('name', layer), ...)``, under the given name, so parameters and ``state_dict()`` keys
are the structured names fluid 1.8 gives (``0.weight``, ``l1.bias``, ``linears.3.weight``).
paddle_nn.py binds the same classes (calls run eagerly there) as ``paddle.nn.*``.
"""
import collections

from .layer import Layer
from ..framework.variable import Parameter

__all__ = ["LayerList", "ParameterList", "Sequential"]


def _require(kind, value, what, container):
    if not isinstance(value, kind):
        raise TypeError(f"{container} holds {what}s, but got {type(value).__name__}")


class Sequential(Layer):
    """Sublayers called in order, each on the previous one's output.

    ``Sequential(l1, l2)`` names them ``"0"``, ``"1"``; ``Sequential(('a', l1), ('b', l2))`` names them
    ``"a"``, ``"b"``. ``seq[name_or_index]`` reads one, ``seq[k] = layer`` replaces (or adds) one and
    ``del seq[k]`` removes one; ``add_sublayer`` appends under a new name.
    """

    def __init__(self, *layers):
        super().__init__()
        named = len(layers) > 0 and isinstance(layers[0], tuple)
        for idx, item in enumerate(layers):
            if named != isinstance(item, tuple):
                raise TypeError("Sequential takes either layers or (name, layer) pairs, not both")
            name, layer = item if named else (str(idx), item)
            _require(Layer, layer, "Layer", "Sequential")
            self.add_sublayer(str(name), layer)

    def __getitem__(self, name):
        key = str(name)
        if key not in self._sub_layers:
            raise KeyError(f"Sequential has no sublayer {key!r} (it has {list(self._sub_layers)})")
        return self._sub_layers[key]

    def __setitem__(self, name, layer):
        _require(Layer, layer, "Layer", "Sequential")
        setattr(self, str(name), layer)

    def __delitem__(self, name):
        key = str(name)
        if key not in self._sub_layers:
            raise KeyError(f"Sequential has no sublayer {key!r} (it has {list(self._sub_layers)})")
        del self._sub_layers[key]

    def __len__(self):
        return len(self._sub_layers)

    def __iter__(self):
        return iter(self._sub_layers.values())

    def forward(self, input):
        for layer in self._sub_layers.values():
            input = layer(input)
        return input


def _index(idx, length, container):
    """A list index (negative counts from the end) as the key it is registered under."""
    if not isinstance(idx, int) or isinstance(idx, bool):
        raise TypeError(f"{container} indices must be integers or slices, not {type(idx).__name__}")
    if not -length <= idx < length:
        raise IndexError(f"{container} index {idx} out of range (it holds {length})")
    return str(idx % length)


class LayerList(Layer):
    """A Python list of sublayers, each registered under its position (its parameters are the list's).

    Supports ``len``, iteration, indexing (negative too), slicing (a new LayerList of the same layers),
    assignment, ``del`` (the later ones move down), ``append``, ``insert`` and ``extend``.
    """

    def __init__(self, sublayers=None):
        super().__init__()
        for layer in sublayers if sublayers is not None else ():
            self.append(layer)

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return type(self)(list(self._sub_layers.values())[idx])
        return self._sub_layers[_index(idx, len(self), "LayerList")]

    def __setitem__(self, idx, sublayer):
        _require(Layer, sublayer, "Layer", "LayerList")
        setattr(self, _index(idx, len(self), "LayerList"), sublayer)

    def __delitem__(self, idx):
        layers = list(self._sub_layers.values())
        if isinstance(idx, slice):
            del layers[idx]
        else:
            del layers[int(_index(idx, len(layers), "LayerList"))]
        self._renumber(layers)

    def _renumber(self, layers):
        self._sub_layers = collections.OrderedDict((str(i), layer) for i, layer in enumerate(layers))

    def __len__(self):
        return len(self._sub_layers)

    def __iter__(self):
        return iter(self._sub_layers.values())

    def append(self, sublayer):
        """Add ``sublayer`` at the end; returns the list."""
        _require(Layer, sublayer, "Layer", "LayerList")
        self.add_sublayer(str(len(self)), sublayer)
        return self

    def insert(self, index, sublayer):
        """Put ``sublayer`` before position ``index`` (0 <= index < len(self), as fluid 1.8 asks)."""
        assert isinstance(index, int) and 0 <= index < len(self._sub_layers), \
            "index should be an integer in range [0, len(self))"
        _require(Layer, sublayer, "Layer", "LayerList")
        layers = list(self._sub_layers.values())
        layers.insert(index, sublayer)
        self._renumber(layers)

    def extend(self, sublayers):
        """Append every layer of ``sublayers``; returns the list."""
        for layer in sublayers:
            self.append(layer)
        return self


class ParameterList(Layer):
    """A Python list of parameters, each registered under its position (so ``parameters()`` lists them)."""

    def __init__(self, parameters=None):
        super().__init__()
        for param in parameters if parameters is not None else ():
            self.append(param)

    def __getitem__(self, idx):
        return self._parameters[_index(idx, len(self), "ParameterList")]

    def __setitem__(self, idx, param):
        _require(Parameter, param, "Parameter", "ParameterList")
        setattr(self, _index(idx, len(self), "ParameterList"), param)

    def __len__(self):
        return len(self._parameters)

    def __iter__(self):
        return iter(self._parameters.values())

    def append(self, parameter):
        """Add ``parameter`` at the end; returns the list."""
        _require(Parameter, parameter, "Parameter", "ParameterList")
        self.add_parameter(str(len(self)), parameter)
        return self
