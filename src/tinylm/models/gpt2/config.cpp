#include "tinylm/models/gpt2/config.h"

#include <nlohmann/json.hpp>

#include "tinylm/core/error.h"
#include "tinylm/io/atomic_file.h"
#include "tinylm/io/json_strict.h"
#include "tinylm/io/text_file.h"

namespace tinylm::gpt2 {

void Config::validate() const {
  check(vocab_size >= 1, "gpt2 config: vocab_size must be positive, got ", vocab_size);
  check(n_positions >= 1, "gpt2 config: n_positions must be positive, got ", n_positions);
  check(n_embd >= 1, "gpt2 config: n_embd must be positive, got ", n_embd);
  check(n_layer >= 1, "gpt2 config: n_layer must be positive, got ", n_layer);
  check(n_head >= 1, "gpt2 config: n_head must be positive, got ", n_head);
  check(n_inner >= 0, "gpt2 config: n_inner must be positive or null, got ", n_inner);
  check(n_embd % n_head == 0, "gpt2 config: n_embd (", n_embd, ") must be divisible by n_head (",
        n_head, ")");
  check(layer_norm_epsilon > 0, "gpt2 config: layer_norm_epsilon must be positive");
  check(static_cast<int64_t>(vocab_size) * n_embd < (int64_t{1} << 40) && n_layer <= 4096 &&
            n_positions <= (1 << 20) && n_embd <= (1 << 16),
        "gpt2 config: sizes are implausibly large");
}

namespace {
int get_int(const nlohmann::ordered_json& j, const char* key, const std::string& path) {
  const auto it = j.find(key);
  check(it != j.end(), path, ": missing '", key, "'");
  check(it->is_number_integer(), path, ": '", key, "' must be an integer");
  const int64_t v = it->get<int64_t>();
  check(v >= INT32_MIN && v <= INT32_MAX, path, ": '", key, "' out of range");
  return static_cast<int>(v);
}
}  // namespace

Config read_config_json(const std::string& path) {
  const nlohmann::ordered_json j = io::parse_json_strict(io::read_file(path), path);
  check(j.is_object(), path, ": not a JSON object");
  Config c;
  c.vocab_size = get_int(j, "vocab_size", path);
  c.n_positions =
      j.contains("n_positions") ? get_int(j, "n_positions", path) : get_int(j, "n_ctx", path);
  c.n_embd = get_int(j, "n_embd", path);
  c.n_layer = get_int(j, "n_layer", path);
  c.n_head = get_int(j, "n_head", path);
  if (j.contains("n_inner") && !j["n_inner"].is_null()) c.n_inner = get_int(j, "n_inner", path);
  if (j.contains("layer_norm_epsilon")) {
    check(j["layer_norm_epsilon"].is_number(), path, ": 'layer_norm_epsilon' must be a number");
    c.layer_norm_epsilon = j["layer_norm_epsilon"].get<double>();
  }
  const std::string act = j.contains("activation_function") && j["activation_function"].is_string()
                              ? j["activation_function"].get<std::string>()
                              : "gelu_new";
  check(act == "gelu_new" || act == "gelu_pytorch_tanh", path,
        ": unsupported activation_function '", act, "' (GPT-2 uses the tanh GELU, gelu_new)");
  try {
    c.validate();
  } catch (const Error& e) {
    fail(path, ": ", e.what());
  }
  return c;
}

void write_config_json(const std::string& path, const Config& c) {
  nlohmann::ordered_json j;
  j["architectures"] = {"GPT2LMHeadModel"};
  j["model_type"] = "gpt2";
  j["vocab_size"] = c.vocab_size;
  j["n_positions"] = c.n_positions;
  j["n_ctx"] = c.n_positions;
  j["n_embd"] = c.n_embd;
  j["n_layer"] = c.n_layer;
  j["n_head"] = c.n_head;
  j["n_inner"] =
      c.n_inner > 0 ? nlohmann::ordered_json(c.n_inner) : nlohmann::ordered_json(nullptr);
  j["activation_function"] = "gelu_new";
  j["layer_norm_epsilon"] = c.layer_norm_epsilon;
  j["initializer_range"] = 0.02;
  j["resid_pdrop"] = 0.1;
  j["embd_pdrop"] = 0.1;
  j["attn_pdrop"] = 0.1;
  j["bos_token_id"] = c.vocab_size - 1;
  j["eos_token_id"] = c.vocab_size - 1;
  const std::string text = j.dump(2) + "\n";
  io::AtomicFile out(path);
  out.write(std::as_bytes(std::span(text.data(), text.size())));
  out.commit();
}

Config preset(const std::string& name) {
  Config c;
  if (name == "124M") return c;
  if (name == "small-test") {
    c.n_positions = 128;
    c.n_embd = 64;
    c.n_layer = 2;
    c.n_head = 4;
    return c;
  }
  if (name == "mini") {  // trains usefully in minutes on a laptop's cores (docs/training.md)
    c.n_positions = 256;
    c.n_embd = 192;
    c.n_layer = 4;
    c.n_head = 6;
    return c;
  }
  fail("unknown gpt2 preset '", name, "' (expected 124M, mini or small-test)");
}

ParamLayout param_layout(const Config& c) {
  c.validate();
  const int64_t C = c.n_embd, F = c.mlp_dim();
  ParamLayout L;
  L.add("wte.weight", {c.vocab_size, C}, ParamRole::embedding);
  L.add("wpe.weight", {c.n_positions, C}, ParamRole::embedding);
  for (int i = 0; i < c.n_layer; ++i) {
    const std::string h = "h." + std::to_string(i) + ".";
    L.add(h + "ln_1.weight", {C}, ParamRole::norm);
    L.add(h + "ln_1.bias", {C}, ParamRole::bias);
    L.add(h + "attn.c_attn.weight", {C, 3 * C});
    L.add(h + "attn.c_attn.bias", {3 * C}, ParamRole::bias);
    L.add(h + "attn.c_proj.weight", {C, C});
    L.add(h + "attn.c_proj.bias", {C}, ParamRole::bias);
    L.add(h + "ln_2.weight", {C}, ParamRole::norm);
    L.add(h + "ln_2.bias", {C}, ParamRole::bias);
    L.add(h + "mlp.c_fc.weight", {C, F});
    L.add(h + "mlp.c_fc.bias", {F}, ParamRole::bias);
    L.add(h + "mlp.c_proj.weight", {F, C});
    L.add(h + "mlp.c_proj.bias", {C}, ParamRole::bias);
  }
  L.add("ln_f.weight", {C}, ParamRole::norm);
  L.add("ln_f.bias", {C}, ParamRole::bias);
  return L;
}

}  // namespace tinylm::gpt2
