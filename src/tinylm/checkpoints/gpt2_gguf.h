#pragma once
// GPT-2 in GGUF, as llama.cpp's convert_hf_to_gguf.py writes its `gpt2` architecture:
//   token_embd, position_embd, blk.N.{attn_norm, attn_qkv, attn_output, ffn_norm, ffn_up,
//   ffn_down}.{weight,bias}, output_norm.{weight,bias}, and output.weight only for an untied
//   head. The four Conv1D weights, stored [in, out] by Hugging Face, are written transposed
//   ([out, in] row-major, so ne = [in, out]) as every other ggml matrix; the attention-mask
//   buffers are not written. 1-D tensors and position_embd stay F32 whatever the file type.
//   Metadata gpt2.{context_length, embedding_length, feed_forward_length, block_count,
//   attention.head_count, attention.layer_norm_epsilon}, general.file_type, and the tokenizer
//   as tokenizer.ggml.{model = "gpt2", pre = "gpt-2", tokens, token_type, merges,
//   bos_token_id, eos_token_id}.
#include <optional>
#include <string>
#include <vector>

#include "tinylm/checkpoints/gpt2_checkpoint.h"
#include "tinylm/core/dtype.h"
#include "tinylm/io/gguf.h"
#include "tinylm/models/gpt2/model.h"
#include "tinylm/tokenizers/bpe.h"

namespace tinylm::checkpoints {

// Writes `params` (gpt2::param_layout order, f32) with `tokenizer` as a GGUF file whose 2-D
// weights (token_embd, the four matrices per block, output) are of `type`, except that the
// output head (token_embd when tied) of a Q4_0 file is Q8_0; a row that is not whole blocks of a
// quantized type falls back to F16, as llama.cpp's converter does.
// `lm_head`: an untied head [vocab, C], or empty. The tokenizer may have fewer tokens than the
// model's vocabulary (the rest are written as "[PAD<i>]", unused), not more. Atomic.
void save_gpt2_gguf(const std::string& path, const gpt2::Config& config,
                    std::span<const float> params, std::span<const float> lm_head,
                    const BpeTokenizer& tokenizer, io::GgmlType type,
                    const std::string& model_name = "");

// A GGUF GPT-2: its configuration and its f32 weights back in Hugging Face layout (Conv1D
// weights transposed back to [in, out]; F16 widened, Q8_0/Q4_0 dequantized), plus what the
// file says about itself.
struct Gpt2Gguf {
  Gpt2Checkpoint checkpoint;
  io::GgmlType weight_type = io::GgmlType::f32;  // the layers' matrices' (blk.0.attn_qkv's)
};
Gpt2Gguf load_gpt2_gguf(const io::GgufFile& file);
Gpt2Gguf load_gpt2_gguf(const std::string& path);

// The configuration only (from the metadata and token_embd), with every tensor checked.
gpt2::Config read_gpt2_gguf_config(const io::GgufFile& file);

// The model ready to run in `dtype`; without one, in the file's own type (q8_0 or q4_0 for a
// quantized file, else f32). A q8_0/q4_0 model whose file holds its matrices in that type (and
// the embedding in Q8_0 or Q4_0, the 1-D tensors and position_embd in F32, as llama.cpp writes
// them) uses the blocks in place in the memory-mapped file; any other combination is read as
// f32 (Conv1D weights transposed back to Hugging Face's layout) and converted, or quantized
// from floats, at load. An F32 file gives logits bit-identical to the safetensors model it was
// converted from.
gpt2::Model load_gpt2_gguf_model(const std::string& path,
                                 std::optional<DType> dtype = std::nullopt);

// The byte-level BPE tokenizer of tokenizer.ggml.*: model "gpt2", pre-tokenizer "gpt-2" (or
// none), tokens, merges; tokens of type CONTROL (3) are special.
BpeTokenizer load_gguf_tokenizer(const io::GgufFile& file);
BpeTokenizer load_gguf_tokenizer(const std::string& path);

}  // namespace tinylm::checkpoints
