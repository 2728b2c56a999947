"""q7emu._dataclass: the package's dataclasses with their methods compiled ahead of time behave as the standard
library's, and q7emu/_dataclass_methods.py is current.

The reference is always :func:`dataclasses.dataclass` applied to the same class body: every behaviour compared
(construction and its defaults, ``repr``, ``==``, ``hash``, frozen assignment and deletion, the signature,
``fields``, ``replace``, ``match``'s arguments) comes from the standard library, never from the code under test.
"""
from __future__ import annotations

import dataclasses
import importlib
import inspect
import pickle
import pkgutil
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import q7emu
from q7emu import _dataclass, _dataclass_methods
from q7emu._dataclass import dataclass as fast_dataclass

ROOT = Path(__file__).resolve().parents[2]


def _import_every_module() -> None:
    for m in pkgutil.walk_packages(q7emu.__path__, "q7emu."):
        if not m.name.endswith("__main__"):
            importlib.import_module(m.name)


def _package_shapes() -> dict[str, _dataclass.Shape]:
    return {k: v for k, v in _dataclass.SHAPES.items() if k.startswith("q7emu.")}


def test_the_generated_methods_are_current():
    _import_every_module()
    text = (ROOT / "q7emu" / "_dataclass_methods.py").read_text()
    assert _dataclass.render_module(_package_shapes()) == text, "stale: run python tools/gen_dataclass_methods.py"
    assert [k for k in _dataclass.COMPILED_AT_IMPORT if k.startswith("q7emu.")] == []
    assert len(_package_shapes()) >= 80  # the package's classes went through the decorator


# --- one class body, made twice --------------------------------------------------------------------------------

_NAMES = ["a", "name", "value", "other", "cls", "defaults", "self_"]
_FACTORY_VALUES = [list, dict, lambda: (1, 2)]


def _field_spec(draw: Any, name: str) -> tuple[str, Any]:
    kind = draw(st.sampled_from(["none", "value", "factory", "field-value"]))
    flags = {"init": draw(st.booleans()), "repr": draw(st.booleans()), "compare": draw(st.booleans()),
             "hash": draw(st.sampled_from([None, True, False]))}
    if kind == "none":  # a bare annotation, or field(...) without a default
        return name, (None if draw(st.booleans()) else dataclasses.field(**flags))
    if kind == "value":
        return name, draw(st.sampled_from([0, "x", (), None]))
    if kind == "factory":
        return name, dataclasses.field(default_factory=draw(st.sampled_from(_FACTORY_VALUES)), **flags)
    return name, dataclasses.field(default=draw(st.sampled_from([7, "y", None])), **flags)


@st.composite
def class_bodies(draw: Any) -> tuple[dict[str, Any], bool]:
    """A class namespace (annotations, defaults, maybe __post_init__ / __eq__ / __hash__ / __repr__) and frozen."""
    names = draw(st.lists(st.sampled_from(_NAMES), unique=True, max_size=4))
    namespace: dict[str, Any] = {"__annotations__": {}, "__module__": __name__}
    for name in names:
        _, default = _field_spec(draw, name)
        namespace["__annotations__"][name] = "object"
        if default is not None:
            namespace[name] = default
    if draw(st.booleans()):
        def __post_init__(self):  # noqa: N807
            object.__setattr__(self, "post_init_ran", True)
        namespace["__post_init__"] = __post_init__
    own = draw(st.sampled_from(["", "__eq__", "__hash__", "__repr__", "__eq__ and None hash"]))
    if own == "__eq__":
        namespace["__eq__"] = lambda self, other: True
    elif own == "__hash__":
        namespace["__hash__"] = lambda self: 5
    elif own == "__repr__":
        namespace["__repr__"] = lambda self: "own"
    elif own == "__eq__ and None hash":
        namespace["__eq__"] = lambda self, other: False
        namespace["__hash__"] = None
    if draw(st.booleans()):
        namespace["__doc__"] = "A class."
    return namespace, draw(st.booleans())


def _made(decorator: Any, namespace: dict[str, Any], frozen: bool, bases: tuple[type, ...] = ()) -> Any:
    """The class of ``namespace`` through ``decorator`` (a fresh copy of the namespace each time, since a
    dataclass replaces its field(...) attributes), or the exception it raised."""
    ns = {k: (dict(v) if k == "__annotations__" else v) for k, v in namespace.items()}
    try:
        return decorator(frozen=frozen)(type("Shape", bases, ns))
    except Exception as e:  # noqa: BLE001 -- the two must raise the same
        return e


def _outcome(fn: Any) -> Any:
    try:
        return ("value", fn())
    except Exception as e:  # noqa: BLE001 -- the two must raise the same
        return ("raised", type(e), str(e))


def _behaviour(cls: type, arg_sets: list[dict[str, Any]]) -> list[Any]:
    """Everything a user can see of ``cls`` and of instances made from ``arg_sets``, as comparable values."""
    seen: list[Any] = [str(inspect.signature(cls)), cls.__doc__, cls.__hash__ is None,
                       getattr(cls, "__match_args__", None),
                       [(f.name, f.default, f.default_factory, f.init, f.repr, f.compare, f.hash)
                        for f in dataclasses.fields(cls)],
                       {k: getattr(cls.__dataclass_params__, k)  # type: ignore[attr-defined]
                        for k in ("init", "repr", "eq", "order", "unsafe_hash", "frozen")}]
    made = []
    for args in arg_sets:
        got = _outcome(lambda args=args: cls(**args))
        seen.append(got[0] if got[0] == "value" else got)
        if got[0] == "value":
            made.append(got[1])
    for x in made:
        seen.append(_outcome(lambda x=x: repr(x).replace(cls.__qualname__, "CLS")))
        seen.append(_outcome(lambda x=x: hash(x)))
        seen.append(_state(x))
        seen.append(_outcome(lambda x=x: setattr(x, "a", 3)))
        seen.append(_outcome(lambda x=x: setattr(x, "not_a_field", 3)))
        seen.append(_outcome(lambda x=x: delattr(x, "name")))
        seen.append(_outcome(lambda x=x: _state(dataclasses.replace(x))))
        seen.append(_outcome(lambda x=x: pickle.loads(pickle.dumps(x)) == x))
        if _EQ_FIELD_BY_FIELD and not all(_complete(z) for z in (x, *made)):
            continue
        seen.append([_outcome(lambda x=x, y=y: x == y) for y in made if not (y is x and _EQ_FIELD_BY_FIELD)]
                    + [_outcome(lambda x=x: x == object())]
                    + ([] if _EQ_FIELD_BY_FIELD else [_outcome(lambda x=x: x != x)]))
    return seen


#: Python 3.13's dataclasses take an instance as equal to itself before reading a field, then compare field by
#: field, stopping at the first that differs; q7emu's classes keep 3.11's tuple comparison on every Python
#: (q7emu/_dataclass.py). The two differ only for an instance missing a field's attribute (3.11 reads every field
#: and raises AttributeError) and for an instance compared with itself: on 3.13+ those comparisons are left out
_EQ_FIELD_BY_FIELD = sys.version_info >= (3, 13)


def _complete(x: Any) -> bool:
    """Whether every field of ``x`` has its attribute (``init=False`` without a default, or deleted, has none)."""
    return all(hasattr(x, f.name) for f in dataclasses.fields(x))


def _state(x: Any) -> Any:
    """An instance's attributes (its ``__dict__``, or its slots' values)."""
    return getattr(x, "__dict__", None) or [getattr(x, f.name, "unset") for f in dataclasses.fields(x)]


def _arg_sets(cls: type) -> list[dict[str, Any]]:
    init = [f for f in dataclasses.fields(cls) if f.init]
    needed = {f.name: 1 for f in init if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING}
    return [needed, {f.name: 2 for f in init}, {f.name: [3] for f in init}, {**needed, "unknown": 1}]


def _compare(namespace: dict[str, Any], frozen: bool, bases: tuple[type, ...] = ()) -> None:
    reference = _made(dataclasses.dataclass, namespace, frozen, bases)
    ours = _made(fast_dataclass, namespace, frozen, bases)
    if isinstance(reference, Exception):
        assert (type(ours), str(ours)) == (type(reference), str(reference))
        return
    assert not isinstance(ours, Exception), ours
    assert _behaviour(ours, _arg_sets(reference)) == _behaviour(reference, _arg_sets(reference))


@settings(max_examples=400)
@given(class_bodies())
def test_a_class_behaves_as_the_standard_librarys(body):
    namespace, frozen = body
    _compare(namespace, frozen)


# pickling needs the classes at module level: two made here, one per frozenness, the same body
@fast_dataclass(frozen=True)
class _PickledFrozen:
    a: int
    b: list[int] = dataclasses.field(default_factory=list, compare=False)


@fast_dataclass
class _PickledPlain:
    a: int
    b: str = "x"


@pytest.mark.parametrize("cls", [_PickledFrozen, _PickledPlain])
def test_instances_pickle_and_copy(cls):
    import copy
    x = cls(1)
    assert pickle.loads(pickle.dumps(x)) == x and copy.deepcopy(x) == x and copy.copy(x) == x
    assert dataclasses.asdict(x)["a"] == 1 and dataclasses.astuple(x)[0] == 1
    match x:
        case cls(a, _):
            assert a == 1
        case _:
            pytest.fail("__match_args__ missing")


def test_subclasses_and_the_forms_it_leaves_to_the_standard_library():
    base_ns = {"__annotations__": {"a": "int"}, "__module__": __name__}
    for frozen_base in (False, True):
        base_ref = _made(dataclasses.dataclass, base_ns, frozen_base)
        base_ours = _made(fast_dataclass, base_ns, frozen_base)
        for frozen in (False, True):
            sub = {"__annotations__": {"b": "int"}, "b": 5, "__module__": __name__}
            reference = _made(dataclasses.dataclass, sub, frozen, (base_ref,))
            ours = _made(fast_dataclass, sub, frozen, (base_ours,))
            if isinstance(reference, Exception):  # a frozen / non-frozen mix: the standard library's TypeError
                assert (type(ours), str(ours)) == (type(reference), str(reference))
            else:
                assert _behaviour(ours, _arg_sets(ours)) == _behaviour(reference, _arg_sets(reference))
                assert base_ours.__dataclass_params__.frozen == frozen_base  # type: ignore[attr-defined]
    # slots, order, a keyword-only field, an InitVar, a field named like a generated local: dataclasses' own
    for options, annotated in [({"slots": True}, {"a": "int"}), ({"order": True}, {"a": "int"}),
                                 ({"kw_only": True}, {"a": "int"}), ({}, {"a": dataclasses.InitVar[int]}),
                                 ({}, {"_FACTORY": "int"}), ({}, {"self": "int"}),
                                 ({}, {"_dflt_a": "int"})]:
        ns = {"__annotations__": annotated, "__module__": __name__}
        reference = dataclasses.dataclass(**options)(type("Other", (), dict(ns, __annotations__=dict(annotated))))
        ours = fast_dataclass(**options)(type("Other", (), dict(ns, __annotations__=dict(annotated))))
        assert "Other" not in str(_dataclass.SHAPES), "the standard library's form took the compiled path"
        assert _behaviour(ours, _arg_sets(ours)) == _behaviour(reference, _arg_sets(reference)), options
    # a non-default argument after a default one: the standard library's TypeError
    ns = {"__annotations__": {"a": "int", "b": "int"}, "a": 1, "__module__": __name__}
    assert (type(e := _made(fast_dataclass, ns, True)), str(e)) == (
        type(r := _made(dataclasses.dataclass, ns, True)), str(r))


def test_a_python_whose_params_cannot_be_set_gets_the_standard_librarys_classes(monkeypatch):
    """If a Python's ``__dataclass_params__`` were read-only, the decorator could neither mask a frozen base nor say
    what the class is: every class is then the standard library's, and behaves as it."""
    class ReadOnlyParams(dataclasses._DataclassParams):  # type: ignore[name-defined,misc]
        __slots__ = ("sealed",)

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            object.__setattr__(self, "sealed", True)

        def __setattr__(self, name: str, value: Any) -> None:
            if getattr(self, "sealed", False):
                raise AttributeError(f"{name} is read-only")
            object.__setattr__(self, name, value)
    base_ns = {"__annotations__": {"a": "int"}, "__module__": __name__}
    sub = {"__annotations__": {"b": "int"}, "b": 5, "__module__": __name__}
    for frozen in (False, True):
        base_ref = _made(dataclasses.dataclass, base_ns, frozen)
        base_ours = _made(fast_dataclass, base_ns, frozen)
        monkeypatch.setattr(dataclasses, "_DataclassParams", ReadOnlyParams)
        monkeypatch.setattr(_dataclass, "SHAPES", {})
        for namespace, ref_bases, our_bases in ((base_ns, (), ()), (sub, (base_ref,), (base_ours,))):
            reference = _made(dataclasses.dataclass, namespace, frozen, ref_bases)
            ours = _made(fast_dataclass, namespace, frozen, our_bases)
            assert _dataclass.SHAPES == {}, "a class took the compiled path"
            assert _behaviour(ours, _arg_sets(ours)) == _behaviour(reference, _arg_sets(reference))
        monkeypatch.undo()


def test_an_entry_of_another_shape_is_not_used(monkeypatch):
    """A class edited since the methods were generated: its entry's shape differs, its methods are compiled."""
    key = f"{__name__}:Edited"

    def wrong_maker(cls, defaults):
        raise AssertionError("the stale entry's methods were used")
    stale_shape = (True, False, ("__init__",), "set", (("gone", True, True, True, True, 0),))
    monkeypatch.setitem(_dataclass_methods.METHODS, key, (stale_shape, wrong_maker))
    monkeypatch.setattr(_dataclass, "COMPILED_AT_IMPORT", [])
    cls = fast_dataclass(frozen=True)(type("Edited", (), {"__annotations__": {"a": "int"}, "__module__": __name__}))
    assert cls(1) == cls(1) and cls(1).a == 1 and _dataclass.COMPILED_AT_IMPORT == [key]
    # the same shape as the class: the entry's maker is used
    shape = _dataclass.SHAPES[key]
    used = []

    def right_maker(cls, defaults):
        used.append(cls)
        return _dataclass._compile(shape)(cls, defaults)
    monkeypatch.setitem(_dataclass_methods.METHODS, key, (shape, right_maker))
    cls = fast_dataclass(frozen=True)(type("Edited", (), {"__annotations__": {"a": "int"}, "__module__": __name__}))
    assert used == [cls] and cls(2).a == 2 and _dataclass.COMPILED_AT_IMPORT == [key]
