// The AND over a workgroup of 256 invocations of each one's flag (0 or 1), through shared
// memory. Every invocation of the workgroup must call it.
shared uint flag_partial[256];

uint workgroup_all(uint f) {
  const uint t = gl_LocalInvocationID.x;
  flag_partial[t] = f;
  barrier();
  for (uint half_size = 128u; half_size > 0u; half_size >>= 1) {
    if (t < half_size) flag_partial[t] &= flag_partial[t + half_size];
    barrier();
  }
  const uint all_set = flag_partial[0];
  barrier();
  return all_set;
}

// isfinite by the bits: a compiler may assume no inf or NaN in isinf / isnan.
uint finite_bits(float v) { return (floatBitsToUint(v) & 0x7f800000u) != 0x7f800000u ? 1u : 0u; }
