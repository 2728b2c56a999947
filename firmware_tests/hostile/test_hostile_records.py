"""Random and mutated 64-byte records through decode, validate and execute on the kernels, starting from the
records and SBUF images of the shipped cases: a record runs, writing only inside its destination
(machine.dst_mask), or raises a q7emu error with SBUF untouched. Nothing else, never a write elsewhere.

(firmware_tests/machine/test_machine.py fuzzes synthetic seed records at length; this starts from real cases.)
"""
from __future__ import annotations

import numpy as np
import pytest
from hostile_lib import EXAMPLES
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from q7emu.errors import Q7Error
from q7emu.isa.records import decode_record
from q7emu.isa.validate import check, model_checks
from q7emu.machine.cases import _prepared_machine, load_case
from q7emu.machine.machine import Machine, dst_mask

CASES = [load_case(p) for p in sorted(EXAMPLES.rglob("*.json"))]
COUNTS = {"records": 0, "ran": 0, "refused": 0, "bytes_written": 0}
MACHINES: dict[int, tuple[Machine, np.ndarray]] = {}


def machine_for(i: int) -> tuple[Machine, np.ndarray]:
    """The case's prepared machine (its SBUF after loading its inputs) and that initial SBUF, reused."""
    if i not in MACHINES:
        m = _prepared_machine(CASES[i], backend="kernel")
        MACHINES[i] = (m, m.sbuf.copy())
    m, initial = MACHINES[i]
    m.sbuf[:] = initial
    return m, initial


@st.composite
def mutated(draw):
    i = draw(st.integers(0, len(CASES) - 1))
    rec = bytearray(CASES[i].record)
    kind = draw(st.integers(0, 5))
    if kind == 0:                                  # random bytes behind the case's opcode
        rec[1:] = draw(st.binary(min_size=63, max_size=63))
    else:
        for _ in range(draw(st.integers(1, 6))):
            pos = draw(st.integers(0, 63))
            if draw(st.booleans()):
                rec[pos] ^= 1 << draw(st.integers(0, 7))
            else:
                rec[pos] = draw(st.sampled_from([0x00, 0x01, 0x7F, 0x80, 0xFF, draw(st.integers(0, 255))]))
    return i, bytes(rec)


@settings(max_examples=400, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(mutated())
def test_mutated_case_records_run_inside_their_destination_or_are_refused(item):
    i, data = item
    case = CASES[i]
    rec = decode_record(data)
    assert rec.encode() == data
    check(rec, case.generation, case.partition_bytes)
    model_checks(rec, case.partition_bytes)
    m, initial = machine_for(i)
    COUNTS["records"] += 1
    try:
        res = m.execute(data)
    except Q7Error as e:
        assert "\n" not in str(e)
        assert np.array_equal(m.sbuf, initial), "SBUF changed although the record was refused"
        COUNTS["refused"] += 1
        return
    COUNTS["ran"] += 1
    changed = m.sbuf != initial
    COUNTS["bytes_written"] += res.bytes_written
    if changed.any():
        mask = dst_mask(rec, case.partition_bytes)
        assert mask is not None and not (changed & ~mask).any(), "a write outside the record's destination"


@pytest.mark.parametrize("bad", [bytes(63), bytes(65), b"", "7b" * 64, None, 64, [0] * 64])
def test_records_of_the_wrong_kind_or_length_are_invalid_argument(bad):
    m, initial = machine_for(0)
    with pytest.raises(Q7Error) as e:
        m.execute(bad)
    assert "\n" not in str(e.value) and np.array_equal(m.sbuf, initial)


def test_zz_report_record_counts():
    print(f"\nmutated-record fuzz on the shipped cases: {COUNTS}")
    assert COUNTS["records"] == 0 or COUNTS["records"] == COUNTS["ran"] + COUNTS["refused"]
