#version 450
// attention_kv_store.glsl: an f16 cache, rows into their own slots.
#define KV_F16 1
#define ROWS 1
#include "attention_kv_store.glsl"
