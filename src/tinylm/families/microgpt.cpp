// microgpt's record: its safetensors checkpoints, which `tinylm microgpt --load` samples from
// (with microgpt.py's RNG) and `train --init-from` continues; generate and serve do not run it.
#include "tinylm/families/family.h"
#include "tinylm/train/family.h"

namespace tinylm::families {

namespace {

const char* recognise(const checkpoints::Sniffed& file) {
  return file.format == checkpoints::Format::safetensors &&
                 file.safetensors_header.find("\"tinylm-microgpt-") != std::string::npos
             ? "a microgpt checkpoint (safetensors)"
             : nullptr;
}

}  // namespace

extern const Family microgpt_family{
    .name = "microgpt",
    .title = "microgpt",
    .expected = "microgpt (tinylm microgpt --load FILE)",
    .recognise = recognise,
    .training = &train::train_family("microgpt"),
};

}  // namespace tinylm::families
