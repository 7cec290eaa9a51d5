#pragma once
// GPT-2's record (gpt2.cpp) and what the GPT-2-only commands (perplexity, convert, init,
// tokenize, train-gpt2) use of it directly: its vocabulary and its weights as a gpt2::Model.
#include <string>

#include "tinylm/families/family.h"
#include "tinylm/models/gpt2/model.h"

namespace tinylm::families {

extern const Family gpt2_family;

// The directory of the vendored GPT-2 vocabulary (data/gpt2 of the checkout, or installed
// under share/tinylm/gpt2); throws, naming the places tried, when there is none.
std::string default_vocab_dir();

// The tokenizer: --tokenizer (a tokenizer.json, a directory or a .gguf), else the model's (a
// .gguf's own, or its directory's; `model` as sniffed, none by default), else the vendored
// GPT-2 vocabulary.
BpeTokenizer load_gpt2_tokenizer(const std::string& explicit_path,
                                 const checkpoints::Sniffed& model = {});

// `file` converted to the dtype asked for (options.dtype; "" : f32, or a quantized GGUF's own
// type), with options.activations, on options.device (a GPU: refused before the weights are
// read when it cannot hold them, f32 unless options.dtype says f16 or bf16); `loaded` gets the
// line the CLI prints: load time, weight bytes and dtype, threads or the GPU.
gpt2::Model load_gpt2_weights(const checkpoints::Sniffed& file, const LoadOptions& options,
                              std::string& loaded);

// A one-line Error, before anything is read or written, when GPU `gpu` does not exist or cannot
// hold a model of `config` in `dtype` decoding `sequences` at once, with up to `logit_rows` rows
// of logits a forward (memory, or the largest buffer a shader binds).
void check_gpt2_fits_gpu(int gpu, const gpt2::Config& config, DType dtype, int sequences,
                         int logit_rows);

}  // namespace tinylm::families
