#version 450
// Causal attention against an f16 cache (attention_forward.glsl): keys and values in pairs.
#define KV_F16 1
#define ROWS 0
#include "attention_forward.glsl"
