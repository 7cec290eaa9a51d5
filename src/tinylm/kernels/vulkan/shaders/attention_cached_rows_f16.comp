#version 450
// A decode step's rows, each against its own slot of an f16 cache (attention_forward.glsl).
#define KV_F16 1
#define ROWS 1
#include "attention_forward.glsl"
