#version 450
// Causal attention, training forward (attention_forward.glsl) over float q | k | v rows, and
// rows against a float cache.
#define KV_F16 0
#define ROWS 0
#include "attention_forward.glsl"
