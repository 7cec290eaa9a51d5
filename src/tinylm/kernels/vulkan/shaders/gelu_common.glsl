// GELU's constants and its tanh argument u = √(2/π) (x + 0.044715 x³), as
// kernels/activation/gelu_reference.h has them.
const float kSqrt2OverPi = 0.7978845608028654;
const float kCubic = 0.044715;

float gelu_u(float v) { return kSqrt2OverPi * (v + kCubic * v * v * v); }
