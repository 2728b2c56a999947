# TensorDouble (made-up POOL opcode 0x5D, q7emu's fifth-opcode example; CONTRIBUTING.md "Add an opcode"): each
# source byte doubled, wrapping. One call per 64-byte chunk of a partition's stream: a2 = the chunk (read-only),
# a4 = its place in the destination stream (tensor_double.py runs the calls).
  ivp_lv2nx8_i v0, a2, 0          # the chunk's 64 bytes
  ivp_add2nx8 v1, v0, v0          # each byte + itself, on 8-bit lanes
  ivp_sv2nx8_ip v1, a4, 0         # stored in place
  retw
