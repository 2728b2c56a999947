"""Validity: every clause of docs/firmware.md §1.3 and §3.2 has a mutation that fails exactly that clause."""
from __future__ import annotations

from dataclasses import replace

import pytest

from q7emu.errors import InvalidArgument, ValidityError
from q7emu.isa.enums import Generation
from q7emu.isa.records import Addr4, Header, Tensor3D, make_dequant_record, make_quantize_mx_record
from q7emu.isa.validate import check, model_checks, require_executable, validate

PB = 0x1000
DQ = make_dequant_record(1, 0, 4, 4, src_partition=2, dst_partition=2, partition_bytes=PB)
Q = make_quantize_mx_record(32, 16, src_partition=0, dst_partition=32, scale_offset=0x200, partition_bytes=PB)


def t3(rec_t: Tensor3D, **kw) -> Tensor3D:
    return replace(rec_t, **kw)


# clause id -> list of (description, record, generation)
DQ_MUTATIONS = {
    "1.3.1": [("opcode 0x7c", replace(DQ, header=Header(0x7C)), "CAYMAN")],
    "1.3.2": [("SUNDA", DQ, "SUNDA")],
    "1.3.3": [("0 channels", replace(DQ, num_active_channels=0), "CAYMAN"),
              ("129 channels", replace(DQ, num_active_channels=129), "CAYMAN")],
    "1.3.4": [("fmt 0", replace(DQ, dequant_fmt=0), "CAYMAN"), ("fmt 5", replace(DQ, dequant_fmt=5), "CAYMAN")],
    "1.3.5": [("group 4", replace(DQ, group_size=4), "CAYMAN")],
    "1.3.6": [("FP6 group 8", replace(DQ, dequant_fmt=4, group_size=8), "MAVERICK")],
    "1.3.7": [("reserved0", replace(DQ, reserved0=b"\0\0\0\1"), "CAYMAN"),
              ("reserved1", replace(DQ, reserved1=b"\0\0\0\x10\0\0\0"), "CAYMAN"),
              ("reserved2", replace(DQ, reserved2=b"\xff\0\0\0"), "CAYMAN")],
    "1.3.8": [("in FP32", replace(DQ, in_dtype=0x0A), "CAYMAN"), ("out FP8", replace(DQ, out_dtype=0x0E), "MARIANA")],
    "1.3.9": [("src 126+4", replace(DQ, src=t3(DQ.src, start_addr=Addr4.sbuf(126, 0, PB))), "CAYMAN"),
              ("dst 125+4", replace(DQ, dst=t3(DQ.dst, start_addr=Addr4.sbuf(125, 0x20, PB))), "CAYMAN")],
    "1.3.10": [("dst PSUM", replace(DQ, dst=t3(DQ.dst, start_addr=Addr4(DQ.dst.start_addr.raw | 1 << 25))), "CAYMAN"),
               ("src beyond SBUF", replace(DQ, src=t3(DQ.src, start_addr=Addr4.sbuf(200, 0, PB))), "CAYMAN"),
               ("dst past partition end", replace(DQ, dst=t3(DQ.dst, start_addr=Addr4.sbuf(2, PB - 16, PB))), "CAYMAN"),
               ("src negative step below 0", replace(DQ, src=t3(DQ.src, step_elem=(-1, 0, 0))), "CAYMAN")],
    "1.3.11": [("dst count", replace(DQ, dst=t3(DQ.dst, num_elem=(7, 1, 1))), "CAYMAN"),
               ("FP6 src not multiple of 3", replace(DQ, dequant_fmt=4), "CAYMAN"),
               ("MX src not multiple of 5", replace(DQ, group_size=8), "CAYMAN")],
}

Q_MUTATIONS = {
    "3.2.1": [("opcode 0xe4", replace(Q, header=Header(0xE4)), "MARIANA")],
    "3.2.2": [("CAYMAN", Q, "CAYMAN"), ("SUNDA", Q, "SUNDA")],
    "3.1": [("16 channels", replace(Q, num_active_channels=16), "MARIANA"),
            ("0 channels", replace(Q, num_active_channels=0), "MAVERICK")],
    "3.2.3": [("src PSUM", replace(Q, src=t3(Q.src, start_addr=Addr4(1 << 25))), "MARIANA"),
              ("data past partition end", replace(Q, dst=replace(Q.dst, start_addr=Addr4.sbuf(32, PB - 8, PB))),
               "MARIANA"),
              ("scale past partition end", replace(Q, dst=replace(Q.dst, scale_addr=Addr4.sbuf(32, PB - 2, PB))),
               "MARIANA"),
              ("src 100+32 partitions", replace(Q, src=t3(Q.src, start_addr=Addr4.sbuf(100, 0, PB))), "MARIANA")],
    "3.2.4-dtype": [("in FP32", replace(Q, in_dtype=0x0A), "MARIANA"),
                    ("out FP4", replace(Q, out_dtype=0x10), "MARIANA_PLUS")],
    "3.2.4-reserved": [("reserved0", replace(Q, reserved0=b"\1\0\0\0"), "MARIANA"),
                       ("reserved1", replace(Q, reserved1=b"\x80"), "MARIANA"),
                       ("reserved2", replace(Q, reserved2=bytes(11) + b"\1"), "MARIANA"),
                       ("dst.reserved", replace(Q, dst=replace(Q.dst, reserved=b"\0\0\0\2")), "MAVERICK")],
    "3.2.5": [("data partition 5", replace(Q, dst=replace(Q.dst, start_addr=Addr4.sbuf(5, 0x100, PB),
                                                          scale_addr=Addr4.sbuf(5, 0x200, PB))), "MARIANA"),
              ("scale in another quadrant", replace(Q, dst=replace(Q.dst, scale_addr=Addr4.sbuf(64, 0x200, PB))),
               "MARIANA")],
}


def failing(rec, gen):
    return {v.clause for v in check(rec, gen, PB) if v.status == "fail"}


def test_baselines_valid():
    for gen in ("CAYMAN", "MARIANA", "MARIANA_PLUS", "MAVERICK"):
        assert failing(DQ, gen) == set()
        validate(DQ, gen, PB)
    for gen in ("MARIANA", "MARIANA_PLUS", "MAVERICK"):
        assert failing(Q, gen) == set()
        validate(Q.encode(), gen, PB)


def test_every_clause_has_a_mutation():
    assert {v.clause for v in check(DQ, "CAYMAN", PB)} == set(DQ_MUTATIONS)
    assert {v.clause for v in check(Q, "MARIANA", PB)} == set(Q_MUTATIONS)


CASES = [(cl, d, r, g) for table in (DQ_MUTATIONS, Q_MUTATIONS) for cl, items in table.items() for d, r, g in items]


@pytest.mark.parametrize("clause,desc,rec,gen", CASES, ids=[f"{c[0]}:{c[1]}" for c in CASES])
def test_clause_triggers_alone(clause, desc, rec, gen):
    assert failing(rec, gen) == {clause}
    with pytest.raises(ValidityError) as ei:
        validate(rec, gen, PB)
    err = ei.value
    assert err.clause == clause
    assert err.field and err.rule
    assert f"[docs/firmware.md §{clause}]" in str(err) and err.field in str(err)
    # byte-level: re-encoding and decoding gives the same verdict (except opcode mutations change the type)
    if clause not in ("1.3.1", "3.2.1"):
        assert failing(rec.encode(), gen) == {clause}


def test_shape_from_register_skips_count_check():
    rec = replace(DQ, src=t3(DQ.src, start_addr=Addr4.register(1, 0x40)), dst=t3(DQ.dst, num_elem=(7, 1, 1)))
    v = {x.clause: x for x in check(rec, "CAYMAN", PB)}
    assert v["1.3.11"].status == "skip" and v["1.3.10"].status == "skip"
    assert failing(rec, "CAYMAN") == set()
    with pytest.raises(InvalidArgument, match="register-form ADDR4"):
        require_executable(rec, PB)


def test_model_checks_quantize_shapes():
    ok = {v.clause: v.status for v in model_checks(Q, PB)}
    assert ok == {"q7.addr-form": "pass", "q7.limit": "pass", "q7.e3-shape": "pass"}
    bad = replace(Q, dst=replace(Q.dst, num_elem=3))
    assert {v.clause for v in model_checks(bad, PB) if v.status == "fail"} == {"q7.e3-shape"}
    big = replace(DQ, src=t3(DQ.src, step_elem=(0, 0, 0), num_elem=(0xFFFF, 0xFFFF, 2)))
    assert {v.clause for v in model_checks(big, PB) if v.status == "fail"} == {"q7.limit"}


def test_other_opcode_has_no_predicate():
    v = check(bytes([0x46]) + bytes(63), Generation.CAYMAN)
    assert len(v) == 1 and v[0].status == "skip"
