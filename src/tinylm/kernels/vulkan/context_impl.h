#pragma once
// Context's and Buffer's state, and how ops run shaders on them. Internal to kernels/vulkan/.
#include <cstddef>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tinylm/kernels/vulkan/context.h"
#include "tinylm/kernels/vulkan/instance.h"
#include "tinylm/kernels/vulkan/vk_check.h"

namespace tinylm::kernels::vulkan {

// Cleanups run in reverse order of registration when it is destroyed, so an object built step
// by step is torn down in order even when a later step throws.
class Teardown {
 public:
  Teardown() = default;
  Teardown(const Teardown&) = delete;
  Teardown& operator=(const Teardown&) = delete;
  ~Teardown() {
    for (auto it = steps_.rbegin(); it != steps_.rend(); ++it) (*it)();
  }
  void add(std::function<void()> step) { steps_.push_back(std::move(step)); }

 private:
  std::vector<std::function<void()>> steps_;
};

// A compute pipeline made from one embedded shader: `bindings` storage buffers at bindings
// 0..n-1 and push constants of push_bytes.
struct Pipeline {
  VkShaderModule module = VK_NULL_HANDLE;
  VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;
  VkPipelineLayout layout = VK_NULL_HANDLE;
  VkPipeline pipeline = VK_NULL_HANDLE;
  uint32_t bindings = 0;
  uint32_t push_bytes = 0;
};

// One shader run over `groups` workgroups with these buffer ranges bound in order.
struct Dispatch {
  std::string_view shader;
  std::vector<View> buffers;
  std::span<const std::byte> push;
  uint32_t groups = 1;
};

struct Context::Impl {
  const Instance& resident = resident_instance();  // keeps the driver loaded (instance.h)
  Instance instance;                               // destroyed after everything below
  VkPhysicalDevice physical = VK_NULL_HANDLE;
  DeviceInfo info;
  VkPhysicalDeviceMemoryProperties memory{};
  uint32_t max_groups = 0;            // maxComputeWorkGroupCount[0]
  VkDeviceSize offset_alignment = 1;  // minStorageBufferOffsetAlignment
  VkDeviceSize max_range = 0;         // maxStorageBufferRange: the most one binding may span
  uint32_t queue_family = 0;
  VkDevice device = VK_NULL_HANDLE;
  VkQueue queue = VK_NULL_HANDLE;
  VkCommandPool command_pool = VK_NULL_HANDLE;
  VkCommandBuffer commands = VK_NULL_HANDLE;
  VkFence fence = VK_NULL_HANDLE;
  VkDescriptorPool descriptor_pool = VK_NULL_HANDLE;
  std::map<std::string, Pipeline, std::less<>> pipelines;
  Teardown teardown;  // last member: runs first

  Impl(int index, bool validation);

  // Ops record their dispatches into one command buffer, which is submitted (and waited for)
  // only when the host needs the results: a download, an upload (so copies and dispatches keep
  // their order), a buffer's release, Context::finish(), or a full descriptor pool. A model's
  // whole step is thus one or a few submissions.
  bool recording = false;
  uint32_t dispatches_recorded = 0;  // in the open command buffer
  // Opens the command buffer (after a barrier ordering it after everything before) if it is not.
  void begin();
  // Submits what was recorded and waits for it; nothing to do if nothing was.
  void flush();
  // Submits `commands` and waits for them. After a lost device every call fails the same way.
  void submit_and_wait(VkCommandBuffer commands);
  bool lost = false;
  void flush_quietly() noexcept;  // for destructors: errors surface at the next wait
  // Records what `record` writes after everything recorded so far, and flushes.
  void submit(const std::function<void(VkCommandBuffer)>& record);
  // Records the dispatches, in order, each seeing the writes of those before it (into the
  // Recording being made, while there is one).
  void run(std::span<const Dispatch> dispatches);
  Context::Recording::Impl* capture = nullptr;  // Context::record's, while it runs its ops
  // The index of a memory type with all of `flags` among those `allowed` (a bit mask).
  uint32_t memory_type(uint32_t allowed, VkMemoryPropertyFlags flags) const;

  // One dispatch into `cmd`, its descriptor set from `pool`, after a barrier on what the
  // dispatches before it in `cmd` wrote (when `after_others`).
  void record_dispatch(VkCommandBuffer cmd, VkDescriptorPool pool, const Dispatch& d,
                       const Pipeline& p, bool after_others);
  VkDescriptorPool make_descriptor_pool();

 private:
  const Pipeline& pipeline(std::string_view shader, uint32_t bindings, uint32_t push_bytes);
  void make_pipeline(Pipeline& p, std::string_view shader, std::span<const uint32_t> code);
};

// A Recording's command buffer and the descriptor pools its sets came from.
struct Context::Recording::Impl {
  Context::Impl* context = nullptr;
  VkCommandBuffer commands = VK_NULL_HANDLE;
  std::vector<VkDescriptorPool> pools;
  uint32_t in_last_pool = 0;  // sets taken from pools.back()
  int dispatches = 0;
  ~Impl();
};

// A VkBuffer and the memory bound to it; released by whoever owns it.
struct RawBuffer {
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceMemory memory = VK_NULL_HANDLE;
};
RawBuffer make_buffer(Context::Impl& context, size_t bytes, VkBufferUsageFlags usage,
                      VkMemoryPropertyFlags flags);
void free_buffer(VkDevice device, RawBuffer& b);

struct Buffer::Impl {
  Context::Impl* context = nullptr;
  RawBuffer raw;
  size_t bytes = 0;
  ~Impl() {
    context->flush_quietly();  // no recorded dispatch may still use the memory
    free_buffer(context->device, raw);
  }
};

}  // namespace tinylm::kernels::vulkan
