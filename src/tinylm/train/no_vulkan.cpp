// train/'s GPU entries in a build without Vulkan: never reached (kernels/vulkan's open_gpu
// refuses first), defined so the library links.
#include "tinylm/core/error.h"
#include "tinylm/kernels/vulkan/devices.h"
#include "tinylm/train/gpt2_trainable.h"

namespace tinylm::train {

std::unique_ptr<Trainable<float>> gpt2_device_trainable(std::shared_ptr<kernels::vulkan::Context>,
                                                        const gpt2::Config&, std::vector<float>,
                                                        gpt2::TrainerOptions) {
  fail("gpt2: this tinylm was built without Vulkan");
}

void check_gpt2_fits_gpu(int gpu, const gpt2::Config&, const gpt2::TrainerOptions&, int64_t) {
  kernels::vulkan::check_gpu(gpu);  // says why there is none
}

}  // namespace tinylm::train
