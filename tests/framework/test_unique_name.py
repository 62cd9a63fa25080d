import pytest

import minifluid as fluid
from minifluid.framework import unique_name


def test_generate_counts_per_key_from_zero():
    with unique_name.guard():
        assert [unique_name.generate("fc"), unique_name.generate("fc"), unique_name.generate("tmp")] == \
            ["fc_0", "fc_1", "tmp_0"]


def test_guard_restores_even_on_exception_and_repeats_sequence():
    with unique_name.guard():
        before = unique_name.generate("x")
        with pytest.raises(RuntimeError):
            with unique_name.guard():
                assert unique_name.generate("x") == "x_0"
                raise RuntimeError("boom")
        assert unique_name.generate("x") == "x_1" and before == "x_0"
    with unique_name.guard():
        first = [unique_name.generate("fc") for _ in range(3)]
    with unique_name.guard():
        second = [unique_name.generate("fc") for _ in range(3)]
    assert first == second == ["fc_0", "fc_1", "fc_2"]


def test_guard_prefix_str_and_bytes():
    with unique_name.guard("A"):
        assert unique_name.generate("fc") == "Afc_0"
    with unique_name.guard(b"B"):
        assert unique_name.generate("fc") == "Bfc_0"


def test_switch_returns_old_generator_and_numbering_continues():
    with unique_name.guard():
        assert unique_name.generate("fc") == "fc_0"
        assert unique_name.generate("fc") == "fc_1"
        old = unique_name.switch()
        assert unique_name.generate("fc") == "fc_0"
        unique_name.switch(old)
        assert unique_name.generate("fc") == "fc_2"


def _build():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [None, 4])
        block = main.global_block()
        names = []
        for _ in range(2):
            w = block.create_parameter(unique_name.generate("fc") + ".w_0", [4, 4])
            out = block.create_var(unique_name.generate("tmp"), dtype=None)
            block.append_op("mul", {"X": x, "Y": w}, {"Out": out})
            names += [w.name, out.name]
            x = out
    return names, [op.type for op in main.global_block().ops]


def test_program_built_twice_under_two_guards_has_identical_names():
    with unique_name.guard():
        a = _build()
    with unique_name.guard():
        b = _build()
    assert a == b
    assert a[0] == ["fc_0.w_0", "tmp_0", "fc_1.w_0", "tmp_1"]
