"""``paddle.compat``: the text/number helpers fluid-era code used to run on Python 2 and 3 alike."""
import math

__all__ = ["floor_division", "get_exception_message", "long_type", "round", "to_bytes", "to_text"]

int_type = int
long_type = int


def _convert(obj, encoding, inplace, one):
    """``one`` applied to ``obj``, or to each item of a list / set (in place with ``inplace``) or to the
    keys and values of a dict."""
    if isinstance(obj, list):
        if inplace:
            obj[:] = [one(item, encoding) for item in obj]
            return obj
        return [one(item, encoding) for item in obj]
    if isinstance(obj, set):
        converted = {one(item, encoding) for item in obj}
        if inplace:
            obj.clear()
            obj.update(converted)
            return obj
        return converted
    if isinstance(obj, dict):
        converted = {one(k, encoding): one(v, encoding) for k, v in obj.items()}
        if inplace:
            obj.clear()
            obj.update(converted)
            return obj
        return converted
    return one(obj, encoding)


def _text(obj, encoding):
    if obj is None or isinstance(obj, (str, bool, float)):
        return obj
    if isinstance(obj, bytes):
        return obj.decode(encoding)
    return str(obj)


def _bytes(obj, encoding):
    if obj is None or isinstance(obj, bytes):
        return obj
    if isinstance(obj, str):
        return obj.encode(encoding)
    return obj


def to_text(obj, encoding="utf-8", inplace=False):
    """bytes -> str (decoded with ``encoding``), item by item in a list, set or dict; None stays None."""
    return _convert(obj, encoding, inplace, _text)


def to_bytes(obj, encoding="utf-8", inplace=False):
    """str -> bytes (encoded with ``encoding``), item by item in a list, set or dict; None stays None."""
    return _convert(obj, encoding, inplace, _bytes)


def round(x, d=0):  # noqa: A001 - paddle.compat.round
    """Round half away from zero (Python 2's ``round``; Python 3 rounds half to even)."""
    if x == 0.0:
        return math.copysign(0.0, x)
    p = 10 ** d
    shifted = x * p + math.copysign(0.5, x)
    return float(math.floor(shifted) if x > 0 else math.ceil(shifted)) / p


def floor_division(x, y):
    return x // y


def get_exception_message(exc):
    """The message of ``exc`` (``str(exc)``)."""
    assert exc is not None
    return str(exc)
