"""The check of a node the compiler made without validation
(serq.ir.trusted) against the one validation makes."""

from __future__ import annotations

from pydantic import BaseModel


def same_node(a, b, path: str = "node", fields: bool = True) -> None:
    """AssertionError unless a and b are equal with equal types all the way
    down (1 and 1.0, False and 0, a list and a tuple differ), and
    (`fields`) set the same fields."""
    if type(a) is not type(b):
        raise AssertionError(f"{path}: {type(a).__name__} made, {type(b).__name__} validated: {a!r:.80} / {b!r:.80}")
    if isinstance(a, BaseModel):
        if a.__dict__.keys() != b.__dict__.keys() or fields and a.model_fields_set != b.model_fields_set:
            raise AssertionError(f"{path}: fields {sorted(a.model_fields_set)} made, {sorted(b.model_fields_set)} validated")
        for k, v in a.__dict__.items():
            same_node(v, b.__dict__[k], f"{path}.{k}", fields)
    elif isinstance(a, tuple):
        if len(a) != len(b):
            raise AssertionError(f"{path}: {len(a)} items made, {len(b)} validated")
        for i, (x, y) in enumerate(zip(a, b)):
            same_node(x, y, f"{path}[{i}]", fields)
    elif a != b and a == a:
        raise AssertionError(f"{path}: {a!r} made, {b!r} validated")
