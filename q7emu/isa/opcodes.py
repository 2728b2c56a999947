"""Every opcode q7emu runs, by its spec (:class:`q7emu.isa.opcode_spec.OpcodeSpec`): the one table of opcodes.

* :func:`spec_of` / :func:`find_spec`: the spec of a record (or of its 64 bytes); :func:`spec_for_opcode` by opcode;
  :func:`specs` all of them, in registration order (0x7B TensorDequantize, 0xE3 QuantizeMX, then those registered).
* :func:`register`: add an opcode from one place, its spec (CONTRIBUTING.md "Add an opcode"): its record class is
  decoded by :func:`q7emu.isa.records.decode_record`, validated by :func:`q7emu.isa.validate.check` /
  :func:`~q7emu.isa.validate.model_checks`, registered in the kernel_info tables of the generations its spec names
  (:meth:`~q7emu.isa.opcode_spec.OpcodeSpec.kernel_info`) and run by the machine; reports, explanations, explore,
  the pytest plugin and the farm follow.
* ``Q7EMU_OPCODES``: a comma-separated list of modules, each imported on the first use of this module, that register
  opcodes when imported (a replay's worker processes, a farm's workers and a pytest run under xdist import them too,
  so an opcode registered this way runs everywhere; a farm's identity check lists every registered opcode).

:func:`version` counts the registrations: what caches a view of the tables keys on it.
"""
from __future__ import annotations

import threading
from typing import cast

from q7emu.errors import InvalidArgument, UnknownOpcode
from q7emu.isa.kernel_info import register_opcode
from q7emu.isa.opcode_spec import OpcodeSpec
from q7emu.isa.quantize_mx import QuantizeMxSpec
from q7emu.isa.records import (
    OPCODES_ENV,
    RECORD_SIZE,
    OpcodeRecord,
    RawRecord,
    RecordClass,
    decode_record,
    load_env,
    register_record_class,
)
from q7emu.isa.tensor_dequantize import TensorDequantizeSpec
from q7emu.isa.validate import register_predicate

__all__ = ["OpcodeSpec", "spec_of", "find_spec", "spec_for_opcode", "specs", "register", "version", "opcode_names",
           "OPCODES_ENV", "is_record", "dispatch_key", "load_env"]


_SPECS: dict[int, OpcodeSpec] = {s.opcode: s for s in (TensorDequantizeSpec(), QuantizeMxSpec())}
_version = 0
_lock = threading.Lock()


def register(spec: OpcodeSpec) -> OpcodeSpec:
    """Add the opcode of ``spec`` (module docstring); returns it. InvalidArgument for an opcode that already has a
    spec, or a spec whose record class does not decode 64 bytes of its opcode."""
    if not isinstance(spec, OpcodeSpec):
        raise InvalidArgument("spec", type(spec).__name__, "must be an OpcodeSpec instance")
    global _version
    with _lock:
        opcode = int(spec.opcode)
        if opcode in _SPECS:
            raise InvalidArgument("opcode", f"0x{opcode:02x}", f"already has a spec ({_SPECS[opcode].name})")
        probe = spec.record_class.decode(bytes([opcode]) + bytes(RECORD_SIZE - 1))
        if not isinstance(probe, spec.record_class) or probe.header.opcode != opcode:
            raise InvalidArgument("record_class", spec.record_class.__name__,
                                  f"must decode 64 bytes of opcode 0x{opcode:02x} to itself")
        register_record_class(opcode, cast(RecordClass, spec.record_class))
        register_predicate(spec.record_class, spec.check, spec.preconditions)
        register_opcode(opcode, spec.engine, spec.kernel_info)
        _SPECS[opcode] = spec
        _version += 1
    return spec


def version() -> int:
    """How many opcodes have been registered beyond the built-in ones (what a cache of the tables keys on)."""
    load_env()
    return _version


def specs() -> tuple[OpcodeSpec, ...]:
    """Every spec, built-ins first, then in registration order."""
    load_env()
    return tuple(_SPECS.values())


def opcode_names() -> list[str]:
    """``0x7b TensorDequantize`` for every spec (a farm's identity: docs/cli.md §4.2)."""
    return [f"0x{s.opcode:02x} {s.name}" for s in specs()]


def spec_for_opcode(opcode: int) -> OpcodeSpec | None:
    """The spec of an opcode, None when q7emu runs no kernel for it."""
    load_env()
    return _SPECS.get(int(opcode))


def find_spec(record: OpcodeRecord | bytes) -> OpcodeSpec | None:
    """The spec of a record (or its 64 bytes), None for an opcode q7emu has no spec for (a :class:`RawRecord`: the
    machine refuses it at dispatch). UnknownOpcode for a record of a class that no spec owns."""
    rec = decode_record(bytes(record)) if isinstance(record, (bytes, bytearray, memoryview)) else record
    spec = spec_for_opcode(rec.header.opcode)
    if spec is not None and isinstance(rec, spec.record_class):
        return spec
    if isinstance(rec, RawRecord) and spec is None:
        return None
    owner = f"the {spec.name} spec reads {spec.record_class.__name__} records" if spec else "no opcode spec owns it"
    raise UnknownOpcode(f"a {type(rec).__name__} record of opcode 0x{rec.header.opcode:02x}: {owner}; register the "
                        "opcode's spec (q7emu.isa.opcodes.register, CONTRIBUTING.md 'Add an opcode')")


def spec_of(record: OpcodeRecord | bytes) -> OpcodeSpec:
    """The spec of a record; UnknownOpcode naming the opcode when q7emu has none."""
    spec = find_spec(record)
    if spec is None:
        rec = decode_record(bytes(record)) if isinstance(record, (bytes, bytearray, memoryview)) else record
        raise UnknownOpcode(f"opcode 0x{rec.header.opcode:02x}: q7emu has no opcode spec for it (its record class, "
                            "geometry, kernel and golden model: q7emu.isa.opcodes.register, CONTRIBUTING.md 'Add an "
                            "opcode')")
    return spec


def is_record(rec: object) -> bool:
    """A decoded record: a :class:`RawRecord` (an opcode without a spec), or a record of its opcode spec's class."""
    if isinstance(rec, RawRecord):
        return True
    try:
        return find_spec(cast(OpcodeRecord, rec)) is not None      # any object: its header is read here
    except (UnknownOpcode, AttributeError, TypeError):
        return False


def dispatch_key(rec: OpcodeRecord) -> tuple[int, int]:
    """(opcode, spec) a kernel_info table looks a record up by: the spec is the first body byte of an 0xF0 record
    without a record class of its own, else 0 (docs/firmware.md §4.1, §4.3)."""
    opcode = rec.header.opcode
    return opcode, (rec.body[0] if isinstance(rec, RawRecord) and opcode == 0xF0 else 0)
