"""``six`` in a legacy script is the real package (a dependency), so every use behaves as with fluid."""
import importlib.metadata
import subprocess
import sys
import textwrap

import pytest

SCRIPT = textwrap.dedent("""
    import builtins
    import functools
    import operator
    import pickle
    import six
    import six.moves
    import six.moves.urllib.parse
    from six.moves import range, reduce, xrange, zip
    from six.moves import cPickle
    from six.moves.urllib.request import urlopen
    import paddle.fluid as fluid

    assert range is xrange is builtins.range
    assert reduce is functools.reduce and six.moves.reduce(operator.mul, range(1, 5)) == 24
    assert cPickle is pickle and cPickle.loads(six.moves.cPickle.dumps({"a": 1})) == {"a": 1}
    assert six.moves.urllib.parse.urlencode({"q": "x y"}) == "q=x+y" and callable(urlopen)
    assert list(six.moves.xrange(3)) == [0, 1, 2] and list(zip("ab", six.moves.range(2))) == [("a", 0), ("b", 1)]
    assert six.PY3 and six.string_types == (str,) and six.b("x") == b"x"
    assert dict(six.iteritems({"k": 2})) == {"k": 2} and six.moves.__name__ == "six.moves"
    assert six.__file__ and not six.__name__.startswith("minifluid")
    x = fluid.data("x", [None, 2])
    print("six", six.__version__, "ok", x.shape)
""")


@pytest.mark.timeout(60)
def test_six_moves_in_a_legacy_script(tmp_path):
    script = tmp_path / "uses_six.py"
    script.write_text(SCRIPT)
    proc = subprocess.run([sys.executable, "-m", "minifluid.compat", str(script)], capture_output=True, text=True,
                          timeout=50)
    assert proc.returncode == 0, proc.stderr
    assert " ok (-1, 2)" in proc.stdout


def test_six_is_an_install_requirement():
    requires = importlib.metadata.requires("minifluid")
    assert any(r.split(">")[0].split("=")[0].strip() == "six" for r in requires), requires
