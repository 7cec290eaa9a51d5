// The largest value over a workgroup of 256 invocations, NaN ignored (v > m, false for NaN),
// through its own shared memory (so a shader may also include workgroup_sum.glsl), by a halving
// tree: the max is exact, so its order only matters for NaN, which it never picks. -inf when
// every value is NaN or -inf. Every invocation of the workgroup must call it.
shared float max_partial[256];
float minus_infinity() { return uintBitsToFloat(0xff800000u); }

float workgroup_max(float v) {
  const uint t = gl_LocalInvocationID.x;
  max_partial[t] = v;
  barrier();
  for (uint half_size = 128; half_size > 0; half_size >>= 1) {
    if (t < half_size) {
      const float other = max_partial[t + half_size];
      if (other > max_partial[t]) max_partial[t] = other;
    }
    barrier();
  }
  const float m = max_partial[0];
  barrier();  // everyone has read it before the next call writes max_partial again
  return m;
}
