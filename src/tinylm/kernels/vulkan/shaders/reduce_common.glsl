// The two-pass reductions (elementwise.h). First pass: workgroup k of `groups` (at most 256)
// has each invocation t walk elements k 256 + t + j groups 256, j = 0, 1, ..., in order, then a
// fixed halving tree through shared memory; its result goes to scratch[1 + k]. Second pass, one
// workgroup: the same tree over scratch[1 ..= groups], into scratch[0]. No order depends on
// scheduling, so a device repeats its bits.
layout(local_size_x = 256) in;
layout(push_constant) uniform Push {
  uint n;
  uint groups;
  uint multiply;  // scale_check: 1 to multiply by factor (the CPU skips a factor of 1)
  float factor;
};
