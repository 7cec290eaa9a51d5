#include "tinylm/models/gpt2/config.h"

#include "tinylm/core/error.h"

namespace tinylm::gpt2 {

void Config::validate() const {
  check_positive("gpt2 config", {{"vocab_size", vocab_size},
                                 {"n_positions", n_positions},
                                 {"n_embd", n_embd},
                                 {"n_layer", n_layer},
                                 {"n_head", n_head}});
  check(n_inner >= 0, "gpt2 config: n_inner must be positive or null, got ", n_inner);
  check(n_embd % n_head == 0, "gpt2 config: n_embd (", n_embd, ") must be divisible by n_head (",
        n_head, ")");
  check(layer_norm_epsilon > 0, "gpt2 config: layer_norm_epsilon must be positive");
  check(static_cast<int64_t>(vocab_size) * n_embd < (int64_t{1} << 40) && n_layer <= 4096 &&
            n_positions <= (1 << 20) && n_embd <= (1 << 16),
        "gpt2 config: sizes are implausibly large");
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
  if (name == "baby") {  // nanoGPT's "baby GPT" (config/train_shakespeare_char.py)
    c.n_positions = 256;
    c.n_embd = 384;
    c.n_layer = 6;
    c.n_head = 6;
    return c;
  }
  if (name == "mini") {  // trains usefully in minutes on a laptop's cores (docs/training.md)
    c.n_positions = 256;
    c.n_embd = 192;
    c.n_layer = 4;
    c.n_head = 6;
    return c;
  }
  fail("unknown gpt2 preset '", name, "' (expected 124M, baby, mini or small-test)");
}

}  // namespace tinylm::gpt2
