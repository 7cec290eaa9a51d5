// The sum over a workgroup of 256 invocations of each one's value, in a fixed order: a halving
// tree through shared memory (not subgroup operations, whose width differs between devices),
// so the bits do not depend on scheduling. Every invocation of the workgroup must call it.
shared float partial[256];

float workgroup_sum(float v) {
  const uint t = gl_LocalInvocationID.x;
  partial[t] = v;
  barrier();
  for (uint half_size = 128; half_size > 0; half_size >>= 1) {
    if (t < half_size) partial[t] += partial[t + half_size];
    barrier();
  }
  const float total = partial[0];
  barrier();  // everyone has read it before the next call writes partial again
  return total;
}
