#version 450
// attention_kv_store.glsl: a float cache, positions of one sequence.
#define KV_F16 0
#define ROWS 0
#include "attention_kv_store.glsl"
