#include "tinylm/checkpoints/gpt2_gguf.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <set>

#include "tinylm/checkpoints/gguf_quant.h"
#include "tinylm/core/error.h"
#include "tinylm/models/gpt2/tensors.h"

namespace tinylm::checkpoints {

namespace {

// gguf-py's TokenType.
constexpr int32_t kTokenNormal = 1, kTokenControl = 3, kTokenUnused = 5;

// One GPT-2 parameter, its place in the flat parameters and in the file.
struct Mapped {
  ParamEntry e;
  std::string gguf;          // the GGUF tensor name
  bool conv1d = false;       // stored [in, out] by HF, [out, in] in GGUF
  bool keep_f32 = false;     // all but the matrices: position_embd and the 1-D tensors
  std::vector<uint64_t> ne;  // GGUF dimensions
};

// The model's tensors (gpt2/tensors.h's list) in the layout's order.
std::vector<Mapped> map_params(const gpt2::Config& config) {
  const ParamLayout layout = gpt2::param_layout(config);
  const std::vector<gpt2::TensorSpec> specs = gpt2::tensor_specs(config);
  std::vector<Mapped> mapped;
  for (size_t i = 0; i < specs.size(); ++i) {
    const gpt2::TensorSpec& t = specs[i];
    Mapped m{layout.entries()[i], t.gguf, t.conv1d, !t.matrix, {}};
    // ne is the row-major shape reversed; a Conv1D weight [in, out] is written as [out, in].
    if (m.conv1d) {
      m.ne = {static_cast<uint64_t>(t.shape[0]), static_cast<uint64_t>(t.shape[1])};
    } else {
      for (auto it = t.shape.rbegin(); it != t.shape.rend(); ++it)
        m.ne.push_back(static_cast<uint64_t>(*it));
    }
    mapped.push_back(std::move(m));
  }
  return mapped;
}

// out[c * rows + r] = in[r * cols + c]: a (rows, cols) matrix into (cols, rows).
void transpose(std::span<const float> in, int64_t rows, int64_t cols, std::span<float> out) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) out[c * rows + r] = in[r * cols + c];
}

// The shortest decimal that rounds to f, as a double: a config written from a GGUF file then
// says 1e-05, not 9.99999974737875e-06, and computes with the same f32 epsilon.
double shortest_double(float f) {
  char buf[32];
  for (int digits = 1; digits <= 9; ++digits) {
    std::snprintf(buf, sizeof buf, "%.*g", digits, static_cast<double>(f));
    const double d = std::strtod(buf, nullptr);
    if (static_cast<float>(d) == f) return d;
  }
  return f;
}

int checked_int(uint64_t v, const std::string& file, const char* key) {
  check(v >= 1 && v <= (uint64_t{1} << 30), file, ": ", key, " = ", v, " is out of range");
  return static_cast<int>(v);
}

}  // namespace

void save_gpt2_gguf(const std::string& path, const gpt2::Config& config,
                    std::span<const float> params, std::span<const float> lm_head,
                    const BpeTokenizer& tokenizer, io::GgmlType type,
                    const std::string& model_name) {
  config.validate();
  const ParamLayout layout = gpt2::param_layout(config);
  check(params.size() == layout.size(), path, ": ", params.size(),
        " parameters, the configuration has ", layout.size());
  const size_t V = static_cast<size_t>(config.vocab_size), C = static_cast<size_t>(config.n_embd);
  check(lm_head.empty() || lm_head.size() == V * C, path, ": the output head has ", lm_head.size(),
        " values, expected ", V * C);
  check(static_cast<size_t>(tokenizer.vocab_size()) <= V, path, ": the tokenizer has ",
        tokenizer.vocab_size(), " tokens, more than the model's vocabulary of ", V);

  io::GgufWriter w;
  w.add_string("general.architecture", "gpt2");
  w.add_string("general.type", "model");
  if (!model_name.empty()) w.add_string("general.name", model_name);
  w.add_u32("gpt2.block_count", static_cast<uint32_t>(config.n_layer));
  w.add_u32("gpt2.context_length", static_cast<uint32_t>(config.n_positions));
  w.add_u32("gpt2.embedding_length", static_cast<uint32_t>(config.n_embd));
  w.add_u32("gpt2.feed_forward_length", static_cast<uint32_t>(config.mlp_dim()));
  w.add_u32("gpt2.attention.head_count", static_cast<uint32_t>(config.n_head));
  w.add_f32("gpt2.attention.layer_norm_epsilon", static_cast<float>(config.layer_norm_epsilon));
  w.add_u32("general.file_type", io::ggml_file_type(type));
  w.add_u32("general.quantization_version", 2);  // GGML_QNT_VERSION

  // The tokenizer as the converter's _set_vocab_gpt2 writes it.
  std::vector<std::string> tokens(V);
  std::vector<int32_t> types(V, kTokenNormal);
  for (size_t i = 0; i < V; ++i) {
    if (i < static_cast<size_t>(tokenizer.vocab_size())) {
      tokens[i] = tokenizer.token(static_cast<int>(i));
    } else {
      tokens[i] = "[PAD" + std::to_string(i) + "]";
      types[i] = kTokenUnused;
    }
  }
  for (int id : tokenizer.special_ids()) types[static_cast<size_t>(id)] = kTokenControl;
  std::vector<std::string> merges(static_cast<size_t>(tokenizer.num_merges()));
  for (size_t r = 0; r < merges.size(); ++r) merges[r] = tokenizer.merge(static_cast<int>(r));
  w.add_string("tokenizer.ggml.model", "gpt2");
  w.add_string("tokenizer.ggml.pre", "gpt-2");
  w.add_string_array("tokenizer.ggml.tokens", tokens);
  w.add_i32_array("tokenizer.ggml.token_type", types);
  w.add_string_array("tokenizer.ggml.merges", merges);
  if (const std::optional<int> eot = tokenizer.eot_id()) {
    w.add_u32("tokenizer.ggml.bos_token_id", static_cast<uint32_t>(*eot));
    w.add_u32("tokenizer.ggml.eos_token_id", static_cast<uint32_t>(*eot));
  }

  std::vector<std::vector<std::byte>> data;  // every tensor's bytes, alive until write()
  data.reserve(layout.entries().size() + 1);
  // The output head (token_embd when tied) of a Q4_0 file is Q8_0: every logit goes through it,
  // and llama.cpp's quantizer likewise gives it a wider type (Q6_K) than Q4_0.
  const std::string head_name = lm_head.empty() ? "token_embd.weight" : "output.weight";
  const auto add = [&](const std::string& name, std::span<const float> values,
                       std::vector<uint64_t> ne, bool keep_f32) {
    io::GgmlType t = keep_f32 ? io::GgmlType::f32 : type;
    if (t == io::GgmlType::q4_0 && name == head_name) t = io::GgmlType::q8_0;
    if (ne[0] % io::ggml_block_size(t) != 0) t = io::GgmlType::f16;  // as the converter falls back
    std::vector<std::byte>& bytes = data.emplace_back(ggml_bytes(t, values.size()));
    encode_ggml(t, values, bytes);
    w.add_tensor(name, t, std::move(ne), bytes);
  };
  std::vector<float> tmp;
  for (const Mapped& m : map_params(config)) {
    const ParamEntry& e = m.e;
    std::span<const float> values = params.subspan(e.offset, e.numel);
    if (m.conv1d) {
      tmp.resize(e.numel);
      transpose(values, e.shape[0], e.shape[1], tmp);
      values = tmp;
    }
    add(m.gguf, values, m.ne, m.keep_f32);
  }
  if (!lm_head.empty()) add("output.weight", lm_head, {C, V}, false);
  w.write(path);
}

gpt2::Config read_gpt2_gguf_config(const io::GgufFile& f) {
  const std::string& p = f.path();
  const std::string arch = f.get_string("general.architecture");
  check(arch == "gpt2", p, ": a GGUF model of architecture '", arch, "'; tinylm runs gpt2");
  gpt2::Config c;
  c.n_embd = checked_int(f.get_uint("gpt2.embedding_length"), p, "gpt2.embedding_length");
  c.n_layer = checked_int(f.get_uint("gpt2.block_count"), p, "gpt2.block_count");
  c.n_head = checked_int(f.get_uint("gpt2.attention.head_count"), p, "gpt2.attention.head_count");
  c.n_positions = checked_int(f.get_uint("gpt2.context_length"), p, "gpt2.context_length");
  const int ff = checked_int(f.get_uint("gpt2.feed_forward_length"), p, "gpt2.feed_forward_length");
  c.n_inner = ff == 4 * c.n_embd ? 0 : ff;
  const double eps = f.get_float("gpt2.attention.layer_norm_epsilon");
  c.layer_norm_epsilon = shortest_double(static_cast<float>(eps));
  const io::GgufTensor* wte = f.find_tensor("token_embd.weight");
  check(wte != nullptr, p, ": no tensor token_embd.weight");
  check(wte->ne.size() == 2 && wte->ne[0] == static_cast<uint64_t>(c.n_embd), p,
        ": tensor token_embd.weight: dimensions do not match gpt2.embedding_length ", c.n_embd);
  c.vocab_size = checked_int(wte->ne[1], p, "the vocabulary (token_embd.weight)");
  try {
    c.validate();
  } catch (const Error& e) {
    fail(p, ": ", e.what());
  }
  // Every tensor of the model, with the dimensions the metadata gives it, and nothing else.
  std::set<std::string> expected;
  for (const Mapped& m : map_params(c)) {
    const io::GgufTensor* t = f.find_tensor(m.gguf);
    check(t != nullptr, p, ": no tensor ", m.gguf);
    check(t->ne == m.ne, p, ": tensor ", m.gguf, ": dimensions do not match the metadata");
    expected.insert(m.gguf);
  }
  if (const io::GgufTensor* out = f.find_tensor("output.weight")) {
    check(out->ne == wte->ne, p, ": tensor output.weight: dimensions differ from token_embd");
    expected.insert("output.weight");
  }
  for (const io::GgufTensor& t : f.tensors()) {
    check(expected.count(t.name), p, ": unexpected tensor ", t.name, " for gpt2");
  }
  return c;
}

Gpt2Gguf load_gpt2_gguf(const std::string& path) {
  return load_gpt2_gguf(io::GgufFile::open(path));
}

Gpt2Gguf load_gpt2_gguf(const io::GgufFile& f) {
  Gpt2Gguf out;
  Gpt2Checkpoint& ck = out.checkpoint;
  ck.config = read_gpt2_gguf_config(f);
  const ParamLayout layout = gpt2::param_layout(ck.config);
  ck.params.resize(layout.size());
  out.weight_type = f.find_tensor("blk.0.attn_qkv.weight")->type;
  std::vector<float> tmp;
  for (const Mapped& m : map_params(ck.config)) {
    const ParamEntry& e = m.e;
    const io::GgufTensor& t = *f.find_tensor(m.gguf);
    const std::span<float> dst = std::span(ck.params).subspan(e.offset, e.numel);
    if (m.conv1d) {
      tmp.resize(e.numel);
      decode_ggml(t.type, f.data(t), tmp);
      transpose(tmp, e.shape[1], e.shape[0], dst);
    } else {
      decode_ggml(t.type, f.data(t), dst);
    }
  }
  if (const io::GgufTensor* head = f.find_tensor("output.weight")) {
    ck.lm_head.resize(head->numel);
    decode_ggml(head->type, f.data(*head), ck.lm_head);
  }
  return out;
}

namespace {

// What a quantized model can take as its token embedding and head: any block type (llama.cpp's
// quantizer gives a tied token_embd Q6_K in a Q4_0 file) or F32.
bool head_type(io::GgmlType t) { return ggml_block_dtype(t) || t == io::GgmlType::f32; }

// Whether the file's tensors can be used in place (gpt2::Model::from_quant_views): the layers'
// matrices of block types (llama.cpp's Q4_K_M and Q5_K_M files mix Q4_K, Q5_K and Q6_K),
// token_embd and output of a head_type, the rest F32.
bool usable_in_place(const io::GgufFile& f, const std::vector<Mapped>& params) {
  for (const Mapped& m : params) {
    const io::GgmlType t = f.find_tensor(m.gguf)->type;
    if (m.conv1d      ? !ggml_block_dtype(t)
        : !m.keep_f32 ? !head_type(t)  // token_embd
                      : t != io::GgmlType::f32)
      return false;
  }
  const io::GgufTensor* out = f.find_tensor("output.weight");
  return out == nullptr || head_type(out->type);
}

}  // namespace

gpt2::Model load_gpt2_gguf_model(const std::string& path, std::optional<DType> dtype) {
  Gpt2Gguf g;
  {  // (the file is unmapped before the weights are converted)
    const io::GgufFile f = io::GgufFile::open(path);
    const gpt2::Config config = read_gpt2_gguf_config(f);
    // The file's type: its MLP's (a k-quant mix gives other matrices other types).
    const std::optional<DType> file_blocks =
        ggml_block_dtype(f.find_tensor("blk.0.ffn_up.weight")->type);
    if (!dtype) dtype = file_blocks.value_or(DType::f32);
    const std::vector<Mapped> params = map_params(config);
    if (is_quantized(*dtype) && dtype == file_blocks && usable_in_place(f, params)) {
      std::map<std::string, const io::GgufTensor*> by_hf_name;
      for (const Mapped& m : params) by_hf_name[m.e.name] = f.find_tensor(m.gguf);
      const io::GgufTensor* head = f.find_tensor("output.weight");
      if (head) by_hf_name["lm_head.weight"] = head;
      // The weights are read at load rather than page by page during the first tokens.
      for (const auto& [name, t] : by_hf_name) f.populate(*t);
      const auto view = [&](const std::string& name) {
        const io::GgufTensor* t = by_hf_name.at(name);
        return gpt2::Model::TensorView{ggml_block_dtype(t->type).value_or(DType::f32),
                                       f.data(*t).data(), f.data(*t).size()};
      };
      // 8-bit activations repack the q8_0/q4_0 matrices over the mapping's own pages (private:
      // the file is not changed), so the weights stay resident once.
      return gpt2::Model::from_quant_views(config, *dtype, view, f.owner(), head != nullptr,
                                           f.writable_bytes());
    }
    g = load_gpt2_gguf(f);
  }
  return gpt2::Model(g.checkpoint.config, std::move(g.checkpoint.params), *dtype,
                     std::move(g.checkpoint.lm_head));
}

BpeTokenizer load_gguf_tokenizer(const io::GgufFile& f) {
  const std::string& p = f.path();
  const std::string& model = f.get_string("tokenizer.ggml.model");
  check(model == "gpt2", p, ": tokenizer.ggml.model '", model,
        "' is not supported (tinylm reads gpt2, the byte-level BPE)");
  if (f.find("tokenizer.ggml.pre")) {
    const std::string& pre = f.get_string("tokenizer.ggml.pre");
    check(pre == "gpt-2", p, ": pre-tokenizer tokenizer.ggml.pre '", pre,
          "' is not supported (tinylm splits text as GPT-2: 'gpt-2')");
  }
  const std::vector<std::string>& tokens =
      f.get_array("tokenizer.ggml.tokens", io::GgufType::string).strings;
  const std::vector<std::string>& merges =
      f.get_array("tokenizer.ggml.merges", io::GgufType::string).strings;
  std::vector<int> specials;
  if (f.find("tokenizer.ggml.token_type")) {
    const io::GgufValue& types = f.get_array("tokenizer.ggml.token_type", io::GgufType::i32);
    check(types.ints.size() == tokens.size(), p, ": tokenizer.ggml.token_type has ",
          types.ints.size(), " entries for ", tokens.size(), " tokens");
    for (size_t i = 0; i < types.ints.size(); ++i) {
      if (static_cast<int32_t>(types.ints[i]) == kTokenControl)
        specials.push_back(static_cast<int>(i));
    }
  }
  return BpeTokenizer::from_tokens(tokens, merges, specials, p);
}

BpeTokenizer load_gguf_tokenizer(const std::string& path) {
  return load_gguf_tokenizer(io::GgufFile::open(path));
}

}  // namespace tinylm::checkpoints
