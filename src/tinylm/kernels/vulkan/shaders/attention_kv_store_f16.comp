#version 450
// attention_kv_store.glsl: an f16 cache, positions of one sequence.
#define KV_F16 1
#define ROWS 0
#include "attention_kv_store.glsl"
