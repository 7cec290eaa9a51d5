// EvermindLM behind the decode interface: a sequence is the incremental decoder
// (models/evermind/decoder.h: O(1) state per layer, the same logits as a full forward), fed one
// token at a time (step_backend.h). Plain temperature sampling draws in id order
// (DrawOrder::by_id), as EvermindLM's generation was defined.
#include "tinylm/generate/step_backend.h"
#include "tinylm/models/evermind/decoder.h"

namespace tinylm::generate {

std::unique_ptr<DecodeBackend> evermind_backend(const evermind::Model<float>& model) {
  return step_backend<evermind::Decoder<float>>(
      model, {.vocab_size = static_cast<int>(model.config().vocab_size),
              .context_limit = 0,
              .draw_order = DrawOrder::by_id});
}

}  // namespace tinylm::generate
