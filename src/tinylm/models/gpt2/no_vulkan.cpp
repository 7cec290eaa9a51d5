// models/gpt2's GPU entries in a build without Vulkan: never reached (kernels/vulkan's open_gpu
// refuses first), defined so the library links.
#include "tinylm/core/error.h"
#include "tinylm/models/gpt2/model_impl.h"

namespace tinylm::gpt2 {

std::unique_ptr<Model::Impl> gpu_impl(std::shared_ptr<kernels::vulkan::Context>, const Model::Impl&,
                                      DType, int) {
  fail("gpt2: this tinylm was built without Vulkan");
}

Model::GpuNeeds gpu_needs(const Config&, DType, int, int) { return {}; }

}  // namespace tinylm::gpt2
