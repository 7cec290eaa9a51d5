#version 450
// attention_kv_store.glsl: a float cache, rows into their own slots.
#define KV_F16 0
#define ROWS 1
#include "attention_kv_store.glsl"
