#version 450
// A decode step's rows, each against its own slot of a float cache (attention_forward.glsl).
#define KV_F16 0
#define ROWS 1
#include "attention_forward.glsl"
