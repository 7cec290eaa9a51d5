#version 450
// Greedy decoding's choice (kernels/reduce/argmax.h) of each row, one workgroup per row: the
// index std::max_element gives, the first of the largest values (-0 and +0 equal), NaN never
// chosen unless it is the row's first value (then 0). Each invocation keeps the best of its
// strided share, then a halving tree keeps the better of two (equal values: the lower index).
layout(local_size_x = 256) in;
layout(std430, binding = 0) writeonly buffer Best { int best[]; };
layout(std430, binding = 1) readonly buffer Logits { float logits[]; };
layout(push_constant) uniform Push {
  uint rows;
  uint V;
};

const uint kNone = 0xffffffffu;
shared float best_value[256];
shared uint best_index[256];

// By its bits: a device may assume that float compares see no NaN.
bool is_nan(float v) { return (floatBitsToUint(v) & 0x7fffffffu) > 0x7f800000u; }

// (va, ia) before (vb, ib): a value (not none, not NaN) before none; larger first; equal values
// by index.
bool better(float va, uint ia, float vb, uint ib) {
  if (ia == kNone || is_nan(va)) return false;
  if (ib == kNone || is_nan(vb)) return true;
  return va > vb || (va == vb && ia < ib);
}

void main() {
  const uint t = gl_LocalInvocationID.x;
  for (uint r = gl_WorkGroupID.x; r < rows; r += gl_NumWorkGroups.x) {
    const uint base = r * V;
    float v = 0.0;
    uint index = kNone;
    for (uint i = t; i < V; i += 256) {
      const float x = logits[base + i];
      if (better(x, i, v, index)) {
        v = x;
        index = i;
      }
    }
    best_value[t] = v;
    best_index[t] = index;
    barrier();
    for (uint half_size = 128; half_size > 0; half_size >>= 1) {
      if (t < half_size && better(best_value[t + half_size], best_index[t + half_size],
                                  best_value[t], best_index[t])) {
        best_value[t] = best_value[t + half_size];
        best_index[t] = best_index[t + half_size];
      }
      barrier();
    }
    if (t == 0) {
      const uint b = best_index[0];
      best[r] = (b == kNone || is_nan(logits[base])) ? 0 : int(b);
    }
    barrier();  // best_* are read before the next row writes them
  }
}
