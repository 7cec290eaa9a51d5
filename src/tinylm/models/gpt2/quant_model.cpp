// GPT-2 with q8_0 / q4_0 (or, from a file, k-quant) matrices (model.h's header states the layout
// and what stays f32).
#include <algorithm>
#include <cstdint>
#include <cstring>

#include "tinylm/core/error.h"
#include "tinylm/kernels/activation/gelu.h"
#include "tinylm/kernels/attention/causal.h"
#include "tinylm/kernels/matmul/stream.h"
#include "tinylm/kernels/norm/layernorm.h"
#include "tinylm/kernels/quant/blocks.h"
#include "tinylm/kernels/quant/int_matmul.h"
#include "tinylm/kernels/quant/matmul.h"
#include "tinylm/models/gpt2/host_forward.h"
#include "tinylm/models/gpt2/model_impl.h"
#include "tinylm/models/gpt2/tensors.h"

namespace tinylm::gpt2 {

namespace k = tinylm::kernels;

DType quant_embedding_dtype(DType dtype) { return is_quantized(dtype) ? DType::q8_0 : dtype; }

namespace {

struct Matrix {
  DType dtype = DType::q8_0;
  const std::byte* data = nullptr;  // rows of blocks, ggml's layout (or f32 rows: a file's wte)
  bool packed = false;              // data in int_matmul.h's layout, for 8-bit activations
  bool in_place = false;            // packed over a view's own bytes (made writable)
  const std::byte* file_data = nullptr;  // while packed into a copy: the file's own bytes
};

// Every matrix's input width must be whole blocks.
void check_widths(const Config& c, DType dtype) {
  check(is_quantized(dtype), "gpt2: ", dtype_name(dtype), " is not a quantized type");
  const int64_t block = dtype_block_size(dtype);
  check(c.n_embd % block == 0 && c.mlp_dim() % block == 0, "gpt2: ", dtype_name(dtype),
        " needs n_embd (", c.n_embd, ") and the MLP width (", c.mlp_dim(), ") to be multiples of ",
        block, ", the block size");
}

struct QuantImpl final : HostForward<QuantImpl> {
  // Owned storage (quantized at load), or views into memory that `owner` keeps alive.
  std::vector<std::byte> blocks;
  std::vector<std::byte> packed_copies;  // a file's matrices packed, while activations are q8_0
  std::vector<float> small;
  std::shared_ptr<const void> owner;
  Model::MakeWritable make_writable;  // views that may be repacked in place (a private mapping)
  Tensors<const float*, Matrix> weights;
  Matrix lm_head;  // weights.wte when tied
  size_t bytes = 0;

  // Quantized at load from f32 tensors in Hugging Face's layout.
  QuantImpl(const Config& c, DType dt, const Model::TensorReader& read, bool untied_head) {
    config = c;
    dtype = dt;
    cache_dtype = DType::f32;
    check_widths(c, dt);
    const DType emb = quant_embedding_dtype(dt);
    const auto type_of = [&](const TensorSpec& t) { return t.conv1d ? dt : emb; };  // wte: emb
    size_t n_blocks = 0, n_small = 0;
    for_each_tensor(c, weights, [&](const TensorSpec& t, auto&, auto matrix) {
      if constexpr (matrix)
        n_blocks += storage_bytes(type_of(t), shape_numel(t.shape));
      else
        n_small += static_cast<size_t>(shape_numel(t.shape));
    });
    const size_t head_offset = n_blocks;
    if (untied_head) n_blocks += storage_bytes(emb, int64_t{c.vocab_size} * c.n_embd);
    blocks.resize(n_blocks);
    small.resize(n_small);
    std::vector<float> f32, transposed;
    std::vector<std::byte> quantized;
    const auto quantize_tensor = [&](const std::string& name, DType type, int64_t rows,
                                     int64_t cols, bool conv1d, size_t offset) {
      if (conv1d) {
        // (nin, nout) -> (nout, nin), blocks along the inputs: a block's worth of input rows at
        // a time, transposed and quantized, each output's block then put in its row.
        const int64_t block = dtype_block_size(type);
        const size_t block_bytes = storage_bytes(type, block),
                     row_bytes = storage_bytes(type, rows);
        f32.resize(static_cast<size_t>(block * cols));
        transposed.resize(f32.size());
        quantized.resize(storage_bytes(type, block * cols));
        for (int64_t i0 = 0; i0 < rows; i0 += block) {
          read(name, DType::f32, f32.data(), f32.size(), static_cast<size_t>(i0 * cols));
          for (int64_t j = 0; j < block; ++j) {
            for (int64_t o = 0; o < cols; ++o) transposed[o * block + j] = f32[j * cols + o];
          }
          k::quantize(type, transposed.data(), quantized.data(), block * cols);
          std::byte* dst = blocks.data() + offset + static_cast<size_t>(i0 / block) * block_bytes;
          for (int64_t o = 0; o < cols; ++o)
            std::memcpy(dst + o * row_bytes, quantized.data() + o * block_bytes, block_bytes);
        }
      } else {
        // Rows are quantized alone (blocks along a row), so the embedding and the head (the
        // largest tensors: as f32, more than the quantized model) go a few MB at a time.
        const int64_t chunk = std::max<int64_t>(1, (int64_t{1} << 18) / cols);
        f32.resize(static_cast<size_t>(std::min(rows, chunk) * cols));
        for (int64_t r0 = 0; r0 < rows; r0 += chunk) {
          const int64_t n = std::min(chunk, rows - r0) * cols;
          read(name, DType::f32, f32.data(), static_cast<size_t>(n),
               static_cast<size_t>(r0 * cols));
          k::quantize(type, f32.data(), blocks.data() + offset + storage_bytes(type, r0 * cols), n);
        }
      }
      return Matrix{type, blocks.data() + offset};
    };
    n_blocks = n_small = 0;
    for_each_tensor(c, weights, [&](const TensorSpec& t, auto& field, auto matrix) {
      const int64_t numel = shape_numel(t.shape);
      if constexpr (matrix) {
        field = quantize_tensor(t.name, type_of(t), t.shape[0], t.shape[1], t.conv1d, n_blocks);
        n_blocks += storage_bytes(type_of(t), numel);
      } else {
        field = small.data() + n_small;
        read(t.name, DType::f32, small.data() + n_small, static_cast<size_t>(numel), 0);
        n_small += static_cast<size_t>(numel);
      }
    });
    lm_head = weights.wte;
    if (untied_head)
      lm_head = quantize_tensor("lm_head.weight", emb, c.vocab_size, c.n_embd, false, head_offset);
    bytes = blocks.size() + small.size() * sizeof(float);
  }

  // In place.
  QuantImpl(const Config& c, DType dt,
            const std::function<Model::TensorView(const std::string&)>& tensor,
            std::shared_ptr<const void> keep_alive, bool untied_head) {
    config = c;
    dtype = dt;
    cache_dtype = DType::f32;
    owner = std::move(keep_alive);
    check_widths(c, dt);
    const ParamLayout L = param_layout(c);
    const auto numel = [&](const std::string& name) {
      const ParamEntry* e = L.find(name);  // (lm_head.weight is not in the layout)
      return e ? static_cast<int64_t>(e->numel) : static_cast<int64_t>(c.vocab_size) * c.n_embd;
    };
    const auto view = [&](const std::string& name, bool quantized) {
      const Model::TensorView v = tensor(name);
      check(v.data != nullptr, "gpt2: tensor ", name, ": no data");
      if (quantized) {
        // Any block type (llama.cpp's files mix them: Q6_K for a tied token_embd in Q4_0 files,
        // Q4_K, Q5_K and Q6_K in its k-quant files), and f32 for wte and the head.
        const ParamEntry* e = L.find(name);  // (lm_head.weight is not in the layout)
        const bool emb = e == nullptr || e->role == ParamRole::embedding;
        check(is_quantized(v.dtype) || (emb && v.dtype == DType::f32), "gpt2: tensor ", name,
              " is ", dtype_name(v.dtype), ", expected a block type",
              emb ? " (q8_0, q4_0, a k-quant) or f32" : " (q8_0, q4_0, a k-quant)");
        const int64_t nin = emb ? c.n_embd : e->shape[0];  // (Conv1D weights are (nin, nout))
        check(!is_quantized(v.dtype) || nin % dtype_block_size(v.dtype) == 0, "gpt2: tensor ", name,
              " is ", dtype_name(v.dtype), ", whose blocks of ", dtype_block_size(v.dtype),
              " do not divide its ", nin, " inputs");
      } else {
        check(v.dtype == DType::f32, "gpt2: tensor ", name, " is ", dtype_name(v.dtype),
              ", expected f32");
      }
      const size_t want = storage_bytes(v.dtype, numel(name));
      check(v.bytes == want, "gpt2: tensor ", name, ": ", v.bytes, " bytes given, its shape needs ",
            want);
      bytes += want;
      return v;
    };
    const auto matrix = [&](const std::string& name) {
      const Model::TensorView v = view(name, true);
      return Matrix{v.dtype, static_cast<const std::byte*>(v.data)};
    };
    const auto f32 = [&](const std::string& name) {
      const Model::TensorView v = view(name, false);
      check(reinterpret_cast<uintptr_t>(v.data) % alignof(float) == 0, "gpt2: tensor ", name,
            ": f32 data not 4-byte aligned");
      return static_cast<const float*>(v.data);
    };
    bind_tensors(*this, matrix, f32);
    if (untied_head) lm_head = matrix("lm_head.weight");
  }

  size_t weight_bytes() const override { return bytes; }

  // fn(matrix, nin, nout) for every matrix of the products (wte only as the tied head).
  template <class Fn>
  void for_each_matrix(Fn&& fn) {
    for_each_tensor(config, weights, [&](const TensorSpec& t, auto& field, auto matrix) {
      if constexpr (matrix) {
        if (t.conv1d) fn(field, t.shape[0], t.shape[1]);
      }
    });
    fn(lm_head, config.n_embd, config.vocab_size);
  }

  // 8-bit activations read the q8_0 / q4_0 matrices packed (int_matmul.h): in place where this
  // model owns them (and unpacked when they are turned off), in a copy where they are a file's
  // memory. A tied head is wte: the embedding then reads its rows from the packed bytes.
  void set_activations(DType t) override {
    if (t == activations) return;
    activations = t;
    const bool tied = lm_head.data == weights.wte.data;
    const auto owned = [&](const Matrix& m) -> std::byte* {  // m's bytes, writable, if ours
      const bool ours =
          !blocks.empty() && m.data >= blocks.data() && m.data < blocks.data() + blocks.size();
      return ours ? blocks.data() + (m.data - blocks.data()) : nullptr;
    };
    const auto packable = [](const Matrix& m) {
      return m.dtype == DType::q8_0 || m.dtype == DType::q4_0;
    };
    if (t == DType::q8_0) {
      size_t copies = 0;
      for_each_matrix([&](Matrix& m, int64_t nin, int64_t nout) {
        if (packable(m) && !owned(m) && !make_writable)
          copies += storage_bytes(m.dtype, nin * nout);
      });
      packed_copies.resize(copies);
      size_t at = 0;
      for_each_matrix([&](Matrix& m, int64_t nin, int64_t nout) {
        if (!packable(m)) return;
        std::byte* out = owned(m);
        if (!out && make_writable) {  // the view's own pages, this process's alone from now
          out = make_writable(m.data, storage_bytes(m.dtype, nin * nout));
          m.in_place = true;
        } else if (!out) {
          m.file_data = m.data;
          out = packed_copies.data() + at;
          at += storage_bytes(m.dtype, nin * nout);
        }
        k::pack_int8(m.dtype, out, m.data, nin, nout);
        m.data = out;
        m.packed = true;
      });
    } else {
      for_each_matrix([&](Matrix& m, int64_t nin, int64_t nout) {
        if (!m.packed) return;
        if (m.file_data) {
          m.data = m.file_data;
          m.file_data = nullptr;
        } else {
          std::byte* at = m.in_place ? const_cast<std::byte*>(m.data) : owned(m);  // (writable)
          k::unpack_int8(m.dtype, at, m.data, nin, nout);
        }
        m.packed = false;
      });
      std::vector<std::byte>().swap(packed_copies);
    }
    if (tied) weights.wte = lm_head;
  }

  // ForwardPass's storage calls. wte[token] + wpe[position], wte's row dequantized.
  void embed(float* out, const int32_t* token_ids, int64_t rows, int64_t first_position) const {
    const int64_t C = config.n_embd;
    const Matrix& wte = weights.wte;
    const size_t wte_row = storage_bytes(wte.dtype, C);
    thread_local std::vector<std::byte> row_blocks;
    for (int64_t r = 0; r < rows; ++r) {
      float* xr = out + r * C;
      const std::byte* row = wte.data + static_cast<size_t>(token_ids[r]) * wte_row;
      if (wte.packed) {
        row_blocks.resize(wte_row);
        k::unpack_int8_row(wte.dtype, row_blocks.data(), wte.data, C, config.vocab_size,
                           token_ids[r]);
        row = row_blocks.data();
      }
      if (wte.dtype == DType::f32)
        std::memcpy(xr, row, wte_row);
      else
        k::dequantize(wte.dtype, row, xr, C);
      const float* pr = weights.wpe + (first_position + r) * C;
      for (int64_t i = 0; i < C; ++i) xr[i] = xr[i] + pr[i];
    }
  }
  void matmul(float* y, const float* in, const Matrix& w, const float* b, int64_t rows, int64_t nin,
              int64_t nout) const {
    if (w.packed) {
      k::quant_matmul_int8(w.dtype, y, in, w.data, b, rows, nin, nout);
      return;
    }
    k::quant_matmul(w.dtype, y, in, w.data, b, rows, nin, nout);
  }
  void head(std::span<float> logits, const float* normed, int64_t rows) const {
    if (lm_head.dtype == DType::f32) {
      k::matmul_out_in(logits.data(), normed, reinterpret_cast<const float*>(lm_head.data), rows,
                       config.n_embd, config.vocab_size);
      return;
    }
    matmul(logits.data(), normed, lm_head, nullptr, rows, config.n_embd, config.vocab_size);
  }
};

}  // namespace

std::unique_ptr<Model::Impl> quant_impl_from_reader(const Config& config, DType dtype,
                                                    const Model::TensorReader& read,
                                                    bool untied_head) {
  return std::make_unique<QuantImpl>(config, dtype, read, untied_head);
}

std::unique_ptr<Model::Impl> quant_impl_from_views(
    const Config& config, DType dtype,
    const std::function<Model::TensorView(const std::string&)>& tensor,
    std::shared_ptr<const void> owner, bool untied_head, Model::MakeWritable writable) {
  auto impl = std::make_unique<QuantImpl>(config, dtype, tensor, std::move(owner), untied_head);
  impl->make_writable = std::move(writable);
  return impl;
}

}  // namespace tinylm::gpt2
