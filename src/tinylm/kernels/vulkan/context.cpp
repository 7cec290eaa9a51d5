#include "tinylm/kernels/vulkan/context.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "tinylm/core/error.h"
#include "tinylm/kernels/vulkan/context_impl.h"
#include "tinylm/kernels/vulkan/shaders.h"

namespace tinylm::kernels::vulkan {
namespace {

// Descriptor sets one submission may use (one per dispatch; more dispatches make more
// submissions), and bindings per shader.
constexpr uint32_t kMaxDispatches = 256;
constexpr uint32_t kMaxBindings = 8;

// Work of the src stages' writes (src access) made visible to the dst stages' dst accesses.
void memory_barrier(VkCommandBuffer cmd, VkPipelineStageFlags src_stage, VkAccessFlags src,
                    VkPipelineStageFlags dst_stage, VkAccessFlags dst) {
  VkMemoryBarrier barrier{};
  barrier.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER;
  barrier.srcAccessMask = src;
  barrier.dstAccessMask = dst;
  vkCmdPipelineBarrier(cmd, src_stage, dst_stage, 0, 1, &barrier, 0, nullptr, 0, nullptr);
}

// What `cmd` records next sees all memory written before it (a submission's, a replay's start).
void after_everything_before(VkCommandBuffer cmd) {
  memory_barrier(cmd, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, VK_ACCESS_MEMORY_WRITE_BIT,
                 VK_PIPELINE_STAGE_ALL_COMMANDS_BIT,
                 VK_ACCESS_MEMORY_READ_BIT | VK_ACCESS_MEMORY_WRITE_BIT);
}

bool validation_wanted(Validation v) {
  if (v != Validation::from_environment) return v == Validation::on;
  const char* env = std::getenv("TINYLM_VULKAN_VALIDATION");
  return env && std::strcmp(env, "") != 0 && std::strcmp(env, "0") != 0;
}

VkPhysicalDevice pick(const Instance& instance, int index) {
  const std::vector<VkPhysicalDevice> devices = instance.physical_devices();
  check(!devices.empty(), "Vulkan: no device (tinylm devices lists them)");
  check(index >= 0 && static_cast<size_t>(index) < devices.size(), "Vulkan: no device ", index,
        " (there are ", devices.size(), "; tinylm devices lists them)");
  return devices[static_cast<size_t>(index)];
}

uint32_t compute_queue_family(VkPhysicalDevice device, const std::string& name) {
  uint32_t count = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(device, &count, nullptr);
  std::vector<VkQueueFamilyProperties> families(count);
  vkGetPhysicalDeviceQueueFamilyProperties(device, &count, families.data());
  // A compute-only family first: on GPUs it is the one that does not share with graphics.
  for (int pass = 0; pass < 2; ++pass) {
    for (uint32_t f = 0; f < count; ++f) {
      const VkQueueFlags flags = families[f].queueFlags;
      if ((flags & VK_QUEUE_COMPUTE_BIT) && (pass == 1 || !(flags & VK_QUEUE_GRAPHICS_BIT)))
        return f;
    }
  }
  fail("Vulkan: device '", name, "' has no compute queue");
}

}  // namespace

Context::Impl::Impl(int index, bool validation) : instance(validation) {
  physical = pick(instance, index);
  info = describe(physical, index);
  check(api_version(physical) >= VK_API_VERSION_1_2, "Vulkan: device '", info.name,
        "' offers Vulkan ", info.api_version, "; tinylm needs 1.2");
  vkGetPhysicalDeviceMemoryProperties(physical, &memory);
  VkPhysicalDeviceProperties props;
  vkGetPhysicalDeviceProperties(physical, &props);
  max_groups = props.limits.maxComputeWorkGroupCount[0];
  offset_alignment = props.limits.minStorageBufferOffsetAlignment;
  max_range = props.limits.maxStorageBufferRange;
  queue_family = compute_queue_family(physical, info.name);

  const float priority = 1.0f;
  VkDeviceQueueCreateInfo queue_info{};
  queue_info.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO;
  queue_info.queueFamilyIndex = queue_family;
  queue_info.queueCount = 1;
  queue_info.pQueuePriorities = &priority;
  VkDeviceCreateInfo device_info{};
  device_info.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO;
  device_info.queueCreateInfoCount = 1;
  device_info.pQueueCreateInfos = &queue_info;
  check_vk(vkCreateDevice(physical, &device_info, nullptr, &device), "vkCreateDevice");
  teardown.add([this] { vkDestroyDevice(device, nullptr); });
  // Before anything else is destroyed: nothing may still be running.
  teardown.add([this] { vkDeviceWaitIdle(device); });
  vkGetDeviceQueue(device, queue_family, 0, &queue);

  VkCommandPoolCreateInfo pool_info{};
  pool_info.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO;
  pool_info.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  pool_info.queueFamilyIndex = queue_family;
  check_vk(vkCreateCommandPool(device, &pool_info, nullptr, &command_pool), "vkCreateCommandPool");
  teardown.add([this] { vkDestroyCommandPool(device, command_pool, nullptr); });
  VkCommandBufferAllocateInfo command_info{};
  command_info.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO;
  command_info.commandPool = command_pool;
  command_info.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  command_info.commandBufferCount = 1;
  check_vk(vkAllocateCommandBuffers(device, &command_info, &commands), "vkAllocateCommandBuffers");

  VkFenceCreateInfo fence_info{};
  fence_info.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO;
  check_vk(vkCreateFence(device, &fence_info, nullptr, &fence), "vkCreateFence");
  teardown.add([this] { vkDestroyFence(device, fence, nullptr); });

  descriptor_pool = make_descriptor_pool();
  teardown.add([this] { vkDestroyDescriptorPool(device, descriptor_pool, nullptr); });
  teardown.add([this] {
    for (auto& [name, p] : pipelines) {
      vkDestroyPipeline(device, p.pipeline, nullptr);
      vkDestroyPipelineLayout(device, p.layout, nullptr);
      vkDestroyDescriptorSetLayout(device, p.set_layout, nullptr);
      vkDestroyShaderModule(device, p.module, nullptr);
    }
  });
}

uint32_t Context::Impl::memory_type(uint32_t allowed, VkMemoryPropertyFlags flags) const {
  for (uint32_t t = 0; t < memory.memoryTypeCount; ++t) {
    if ((allowed & (1u << t)) && (memory.memoryTypes[t].propertyFlags & flags) == flags) return t;
  }
  fail("Vulkan: device '", info.name, "' has no memory type with properties 0x", std::hex, flags);
}

void Context::Impl::begin() {
  if (recording) return;
  VkCommandBufferBeginInfo begin_info{};
  begin_info.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
  begin_info.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  check_vk(vkBeginCommandBuffer(commands, &begin_info), "vkBeginCommandBuffer");
  recording = true;
  dispatches_recorded = 0;
  after_everything_before(commands);  // each submission sees the ones before it
}

void Context::Impl::flush() {
  if (!recording) return;
  // Whatever happens below, the next op starts a fresh command buffer.
  recording = false;
  dispatches_recorded = 0;
  check_vk(vkEndCommandBuffer(commands), "vkEndCommandBuffer");
  submit_and_wait(commands);
  check_vk(vkResetCommandBuffer(commands, 0), "vkResetCommandBuffer");
  check_vk(vkResetDescriptorPool(device, descriptor_pool, 0), "vkResetDescriptorPool");
}

namespace {

// Test hook (the faults a device can have, on any device): TINYLM_TEST_GPU_FAULT=lost:N makes
// this process's Nth submission report a lost device; shader:NAME makes building shader NAME
// fail as a driver's compiler can.
struct Fault {
  int64_t lost_at = -1;
  std::string shader;
};
const Fault& test_fault() {
  static const Fault f = [] {
    Fault out;
    const char* v = std::getenv("TINYLM_TEST_GPU_FAULT");
    const std::string_view s = v ? v : "";
    if (s.starts_with("lost:")) out.lost_at = std::atoll(std::string(s.substr(5)).c_str());
    if (s.starts_with("shader:")) out.shader = std::string(s.substr(7));
    return out;
  }();
  return f;
}

}  // namespace

void Context::Impl::submit_and_wait(VkCommandBuffer cmd) {
  static std::atomic<int64_t> submissions{0};
  const bool faulted = ++submissions == test_fault().lost_at;
  lost = lost || faulted;
  if (lost) check_vk(VK_ERROR_DEVICE_LOST, "vkQueueSubmit");
  VkSubmitInfo submit_info{};
  submit_info.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO;
  submit_info.commandBufferCount = 1;
  submit_info.pCommandBuffers = &cmd;
  const auto checked = [&](VkResult r, const char* call) {
    lost = lost || r == VK_ERROR_DEVICE_LOST;
    check_vk(r, call);
  };
  checked(vkQueueSubmit(queue, 1, &submit_info, fence), "vkQueueSubmit");
  checked(vkWaitForFences(device, 1, &fence, VK_TRUE, UINT64_MAX), "vkWaitForFences");
  checked(vkResetFences(device, 1, &fence), "vkResetFences");
}

void Context::Impl::flush_quietly() noexcept {
  try {
    flush();
  } catch (const Error&) {
    // A lost device has lost the buffers too; the next op that waits reports it.
  }
}

VkDescriptorPool Context::Impl::make_descriptor_pool() {
  const VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, kMaxDispatches * kMaxBindings};
  VkDescriptorPoolCreateInfo descriptor_info{};
  descriptor_info.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO;
  descriptor_info.maxSets = kMaxDispatches;
  descriptor_info.poolSizeCount = 1;
  descriptor_info.pPoolSizes = &size;
  VkDescriptorPool pool = VK_NULL_HANDLE;
  check_vk(vkCreateDescriptorPool(device, &descriptor_info, nullptr, &pool),
           "vkCreateDescriptorPool");
  return pool;
}

void Context::Impl::submit(const std::function<void(VkCommandBuffer)>& record) {
  check(capture == nullptr,
        "Vulkan: an upload or download while ops are being recorded for replay (Context::record "
        "takes dispatches only)");
  const bool after_dispatches = recording;
  begin();
  if (after_dispatches) {  // the copies wait for the dispatches recorded before them
    memory_barrier(commands, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT,
                   VK_PIPELINE_STAGE_ALL_COMMANDS_BIT,
                   VK_ACCESS_MEMORY_READ_BIT | VK_ACCESS_MEMORY_WRITE_BIT);
  }
  record(commands);
  flush();
}

const Pipeline& Context::Impl::pipeline(std::string_view shader, uint32_t bindings,
                                        uint32_t push_bytes) {
  if (auto it = pipelines.find(shader); it != pipelines.end()) {
    check(it->second.bindings == bindings && it->second.push_bytes == push_bytes, "Vulkan: shader ",
          shader, " run with ", bindings, " buffers and ", push_bytes,
          " bytes of push constants, made with ", it->second.bindings, " and ",
          it->second.push_bytes);
    return it->second;
  }
  const std::span<const uint32_t> code = shader_spirv(shader);
  check(!code.empty(), "Vulkan: no shader named ", shader, " is built in");
  check(bindings <= kMaxBindings, "Vulkan: shader ", shader, " binds ", bindings,
        " buffers; at most ", kMaxBindings);
  // Made apart and inserted when complete; a failure destroys whatever part was made and names
  // the shader.
  Pipeline p;
  p.bindings = bindings;
  p.push_bytes = push_bytes;
  try {
    make_pipeline(p, shader, code);
  } catch (const Error& e) {
    vkDestroyPipeline(device, p.pipeline, nullptr);
    vkDestroyPipelineLayout(device, p.layout, nullptr);
    vkDestroyDescriptorSetLayout(device, p.set_layout, nullptr);
    vkDestroyShaderModule(device, p.module, nullptr);
    std::string_view why = e.what();
    if (why.starts_with("Vulkan: ")) why.remove_prefix(8);
    fail("Vulkan: shader ", shader, " could not be built on '", info.name, "': ", why);
  }
  return pipelines.emplace(std::string(shader), p).first->second;
}

void Context::Impl::make_pipeline(Pipeline& p, std::string_view shader,
                                  std::span<const uint32_t> code) {
  const uint32_t bindings = p.bindings, push_bytes = p.push_bytes;

  VkShaderModuleCreateInfo module_info{};
  module_info.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO;
  module_info.codeSize = code.size_bytes();
  module_info.pCode = code.data();
  check_vk(vkCreateShaderModule(device, &module_info, nullptr, &p.module), "vkCreateShaderModule");

  std::vector<VkDescriptorSetLayoutBinding> slots(bindings);
  for (uint32_t b = 0; b < bindings; ++b)
    slots[b] = {b, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, nullptr};
  VkDescriptorSetLayoutCreateInfo set_info{};
  set_info.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO;
  set_info.bindingCount = bindings;
  set_info.pBindings = slots.data();
  check_vk(vkCreateDescriptorSetLayout(device, &set_info, nullptr, &p.set_layout),
           "vkCreateDescriptorSetLayout");

  const VkPushConstantRange push{VK_SHADER_STAGE_COMPUTE_BIT, 0, push_bytes};
  VkPipelineLayoutCreateInfo layout_info{};
  layout_info.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO;
  layout_info.setLayoutCount = 1;
  layout_info.pSetLayouts = &p.set_layout;
  layout_info.pushConstantRangeCount = push_bytes ? 1 : 0;
  layout_info.pPushConstantRanges = &push;
  check_vk(vkCreatePipelineLayout(device, &layout_info, nullptr, &p.layout),
           "vkCreatePipelineLayout");

  VkComputePipelineCreateInfo pipeline_info{};
  pipeline_info.sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO;
  pipeline_info.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
  pipeline_info.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  pipeline_info.stage.module = p.module;
  pipeline_info.stage.pName = "main";
  pipeline_info.layout = p.layout;
  check_vk(shader == test_fault().shader
               ? VK_ERROR_UNKNOWN
               : vkCreateComputePipelines(device, VK_NULL_HANDLE, 1, &pipeline_info, nullptr,
                                          &p.pipeline),
           "vkCreateComputePipelines");
}

void Context::Impl::run(std::span<const Dispatch> dispatches) {
  std::vector<const Pipeline*> used;
  for (const Dispatch& d : dispatches) {
    check(d.groups >= 1 && d.groups <= max_groups, "Vulkan: shader ", d.shader, " dispatched over ",
          d.groups, " workgroups; the device allows 1 to ", max_groups);
    for (size_t b = 0; b < d.buffers.size(); ++b) {
      check(d.buffers[b].offset() % offset_alignment == 0, "Vulkan: shader ", d.shader,
            "'s buffer ", b, " starts at byte ", d.buffers[b].offset(),
            ", not a multiple of the device's ", offset_alignment);
      check(d.buffers[b].bytes() <= max_range, "Vulkan: shader ", d.shader, "'s buffer ", b,
            " spans ", d.buffers[b].bytes(), " bytes; device '", info.name, "' binds at most ",
            max_range, " (maxStorageBufferRange)");
    }
    used.push_back(&pipeline(d.shader, static_cast<uint32_t>(d.buffers.size()),
                             static_cast<uint32_t>(d.push.size())));
  }
  for (size_t i = 0; i < dispatches.size(); ++i) {
    if (capture) {  // into the Recording: a fresh pool when its last one is full
      Recording::Impl& r = *capture;
      if (r.pools.empty() || r.in_last_pool == kMaxDispatches) {
        r.pools.push_back(make_descriptor_pool());
        r.in_last_pool = 0;
      }
      record_dispatch(r.commands, r.pools.back(), dispatches[i], *used[i], r.dispatches > 0);
      ++r.in_last_pool;
      ++r.dispatches;
      continue;
    }
    // A full descriptor pool ends the submission; the next one sees its writes.
    if (dispatches_recorded == kMaxDispatches) flush();
    begin();
    record_dispatch(commands, descriptor_pool, dispatches[i], *used[i], dispatches_recorded > 0);
    ++dispatches_recorded;
  }
}

void Context::Impl::record_dispatch(VkCommandBuffer cmd, VkDescriptorPool pool, const Dispatch& d,
                                    const Pipeline& p, bool after_others) {
  VkDescriptorSetAllocateInfo alloc{};
  alloc.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO;
  alloc.descriptorPool = pool;
  alloc.descriptorSetCount = 1;
  alloc.pSetLayouts = &p.set_layout;
  VkDescriptorSet set = VK_NULL_HANDLE;
  check_vk(vkAllocateDescriptorSets(device, &alloc, &set), "vkAllocateDescriptorSets");
  std::vector<VkDescriptorBufferInfo> infos(d.buffers.size());
  std::vector<VkWriteDescriptorSet> writes(d.buffers.size());
  for (size_t b = 0; b < d.buffers.size(); ++b) {
    // An empty range binds the whole buffer instead (a range must not be empty; a shader
    // given no elements reads none).
    const View& v = d.buffers[b];
    infos[b] = {v.buffer().impl().raw.buffer, v.bytes() ? v.offset() : 0,
                v.bytes() ? v.bytes() : VK_WHOLE_SIZE};
    writes[b] = {};
    writes[b].sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET;
    writes[b].dstSet = set;
    writes[b].dstBinding = static_cast<uint32_t>(b);
    writes[b].descriptorCount = 1;
    writes[b].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    writes[b].pBufferInfo = &infos[b];
  }
  vkUpdateDescriptorSets(device, static_cast<uint32_t>(writes.size()), writes.data(), 0, nullptr);
  if (after_others) {  // this dispatch reads what the ones before it wrote
    memory_barrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT,
                   VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                   VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT);
  }
  vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, p.pipeline);
  vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, p.layout, 0, 1, &set, 0, nullptr);
  if (!d.push.empty())
    vkCmdPushConstants(cmd, p.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0,
                       static_cast<uint32_t>(d.push.size()), d.push.data());
  vkCmdDispatch(cmd, d.groups, 1, 1);
}

Context::Recording::Recording() = default;
Context::Recording::~Recording() = default;
Context::Recording::Recording(Recording&&) noexcept = default;
Context::Recording& Context::Recording::operator=(Recording&&) noexcept = default;
int Context::Recording::dispatches() const { return impl_ ? impl_->dispatches : 0; }

Context::Recording::Impl::~Impl() {
  if (!context) return;  // (a replay waits for its work: nothing of it is still running)
  for (VkDescriptorPool pool : pools) vkDestroyDescriptorPool(context->device, pool, nullptr);
  if (commands) vkFreeCommandBuffers(context->device, context->command_pool, 1, &commands);
}

Context::Recording Context::record(const std::function<void()>& ops) {
  Impl& c = *impl_;
  check(c.capture == nullptr, "Vulkan: a recording inside a recording");
  Recording r;
  r.impl_ = std::make_unique<Recording::Impl>();
  Recording::Impl& ri = *r.impl_;
  VkCommandBufferAllocateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO;
  info.commandPool = c.command_pool;
  info.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  info.commandBufferCount = 1;
  check_vk(vkAllocateCommandBuffers(c.device, &info, &ri.commands), "vkAllocateCommandBuffers");
  ri.context = &c;
  VkCommandBufferBeginInfo begin_info{};
  begin_info.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
  check_vk(vkBeginCommandBuffer(ri.commands, &begin_info), "vkBeginCommandBuffer");
  after_everything_before(ri.commands);  // each replay sees what came before (uploads too)
  c.capture = &ri;
  try {
    ops();
  } catch (...) {
    c.capture = nullptr;
    throw;
  }
  c.capture = nullptr;
  check_vk(vkEndCommandBuffer(ri.commands), "vkEndCommandBuffer");
  return r;
}

void Context::replay(const Recording& recording) {
  Impl& c = *impl_;
  check(recording && recording.impl().context == &c,
        "Vulkan: a replay of another Context's recording");
  check(c.capture == nullptr, "Vulkan: a replay while recording");
  c.flush();  // what was recorded before runs first
  c.submit_and_wait(recording.impl().commands);
}

Context::Context(int index, Validation validation)
    : impl_(std::make_unique<Impl>(index, validation_wanted(validation))) {}

Context::~Context() = default;

const DeviceInfo& Context::device() const { return impl_->info; }

bool Context::validation() const { return impl_->instance.validation(); }

void Context::finish() { impl_->flush(); }

std::string device_name(const Context& context) { return context.device().name; }

void check_gpu(int index) {
  const DeviceList list = list_devices();
  check(!list.devices.empty(), "--device gpu: no Vulkan device (", list.why_none, ")");
  const size_t n = list.devices.size();
  check(index >= 0 && static_cast<size_t>(index) < n, "--device gpu:", index, ": this machine has ",
        n, n == 1 ? " GPU, gpu:0" : " GPUs, gpu:0 to gpu:" + std::to_string(n - 1),
        " (tinylm devices lists them)");
}

void check_gpu_fits(int index, const GpuNeed& memory, std::span<const GpuNeed> bindings,
                    std::string_view in) {
  check_gpu(index);
  const DeviceInfo device = list_devices().devices[static_cast<size_t>(index)];
  check(memory.bytes <= device.device_local_bytes, "--device gpu:", index, ": ", memory.what,
        " takes about ", memory_text(memory.bytes), " of device memory", in, ", '", device.name,
        "' has ", memory_text(device.device_local_bytes), " (", memory.hint, ")");
  for (const GpuNeed& b : bindings) {
    check(b.bytes <= device.max_binding_bytes, "--device gpu:", index, ": ", b.what, " ",
          memory_text(b.bytes), in, ", '", device.name, "' binds at most ",
          memory_text(device.max_binding_bytes), " (its maxStorageBufferRange; ", b.hint, ")");
  }
}

std::shared_ptr<Context> open_gpu(int index) {
  check_gpu(index);
  return std::make_shared<Context>(index);
}

std::vector<std::string> Context::validation_messages() const {
  return impl_->instance.validation_messages();
}

}  // namespace tinylm::kernels::vulkan
