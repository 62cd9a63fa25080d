"""The few ``six`` names fluid-era scripts use, for machines without the ``six`` package."""
import builtins
import io

__minifluid_shim__ = True
PY2, PY3 = False, True
string_types = (str,)
integer_types = (int,)
text_type, binary_type = str, bytes
StringIO, BytesIO = io.StringIO, io.BytesIO


class moves:  # noqa: N801 - mirrors six.moves
    range = builtins.range
    zip = builtins.zip
    map = builtins.map
    filter = builtins.filter
    input = builtins.input
    xrange = builtins.range


def iteritems(d, **kw):
    return iter(d.items(**kw))


def itervalues(d, **kw):
    return iter(d.values(**kw))


def iterkeys(d, **kw):
    return iter(d.keys(**kw))


def b(s):
    return s.encode("latin-1")


def u(s):
    return s
