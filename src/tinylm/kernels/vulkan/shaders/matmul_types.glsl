// Operands of the matrix shaders as 32-bit words holding f32 values (type 0) or two f16 (1) or
// bf16 (2) values, the element at an even index in the low half; widened exactly to f32. The
// type is a push constant, the same for every invocation, so the branches do not diverge.
const uint kF32 = 0u;
const uint kF16 = 1u;
const uint kBf16 = 2u;

// The word that holds element i.
uint word_of(uint i, uint type) { return type == kF32 ? i : i >> 1; }

// Element i from its word.
float widen(uint word, uint i, uint type) {
  if (type == kF32) return uintBitsToFloat(word);
  const uint h = (i & 1u) == 0u ? (word & 0xffffu) : (word >> 16);
  return type == kF16 ? unpackHalf2x16(h).x : uintBitsToFloat(h << 16);
}
