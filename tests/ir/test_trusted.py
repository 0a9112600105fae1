"""The compiler's nodes are made without validation (serq.ir.trusted):
the same nodes as validation makes, and validation itself unchanged."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from serq import ir
from serq.ir.trust import same_node
from serq.lang.load import compile_source

ROOT = Path(__file__).resolve().parents[2]


def test_validation_never_calls_the_trusted_constructor():
    # pydantic calls a model's own __init__ while validating unless it is marked as its base one
    assert not ir.Num.__pydantic_custom_init__ and not ir.Program.__pydantic_custom_init__


def test_outside_the_compiler_nodes_are_validated():
    with pytest.raises(ValidationError):
        ir.Num(v="many")
    with pytest.raises(ValidationError):
        ir.Name(name="x", colour=1)


@pytest.mark.parametrize("name", sorted(f.name for f in (ROOT / "instances").glob("*.sq")))
def test_compiled_programs_are_what_validation_makes(name):
    prog, _ = compile_source((ROOT / "instances" / name).read_text(), name)
    assert ir.CHECK_TRUSTED  # tests/conftest.py: every node was checked as it was made
    same_node(prog, ir.Program.model_validate_json(prog.model_dump_json()), fields=False)  # JSON sets every field


def test_same_node_tells_types_apart():
    with pytest.raises(AssertionError):
        same_node(ir.Num(v=1), ir.Num(v=1.0))
    with pytest.raises(AssertionError):
        same_node(ir.Num(v=1), ir.Num(v=1, at=(1, 1)))


def test_a_boolean_constant_is_a_number_in_the_ir():
    # validation makes `int | float` of a boolean constant; the compiler does so too (and the check sees it)
    prog, _ = compile_source("const F = 1 > 2;\npool kv { cap 4; }\nsession s { let x = F + 1; end; }\n"
                             "workload { 1 x s; }\n", "b.sq")
    assert prog.consts == (("F", 0),) and type(prog.consts[0][1]) is int


def test_trust_is_the_compiling_thread_s_own():
    # a node made in another thread while the compiler runs is validated
    import threading

    errors = []

    def other():
        try:
            ir.Num(v="many")
        except ValidationError:
            errors.append("validated")

    with ir.trusted():
        t = threading.Thread(target=other)
        t.start()
        t.join()
        made = ir.Num(v=3)
    assert errors == ["validated"] and made.v == 3
