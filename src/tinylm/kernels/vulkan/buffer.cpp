// Device buffers: device-local memory, filled and read through host-visible staging buffers
// (on a discrete GPU the device-local memory is not mappable; lavapipe's is, but takes the same
// path, so the tests cover it).
#include <algorithm>
#include <cstring>

#include "tinylm/core/error.h"
#include "tinylm/kernels/vulkan/context.h"
#include "tinylm/kernels/vulkan/context_impl.h"

namespace tinylm::kernels::vulkan {

namespace {

// Running out of memory says how much was asked of which device; other failures name the call.
void check_memory(const Context::Impl& context, VkResult r, const char* call, VkDeviceSize bytes) {
  if (r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY) {
    fail("Vulkan: out of ", r == VK_ERROR_OUT_OF_DEVICE_MEMORY ? "device" : "host",
         " memory: cannot allocate ", memory_text(bytes), " on '", context.info.name, "' (",
         memory_text(context.info.device_local_bytes), " device-local)");
  }
  check_vk(r, call);
}

}  // namespace

RawBuffer make_buffer(Context::Impl& context, size_t bytes, VkBufferUsageFlags usage,
                      VkMemoryPropertyFlags flags) {
  RawBuffer b;
  VkBufferCreateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO;
  info.size = std::max<size_t>(bytes, 1);
  info.usage = usage;
  info.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  check_memory(context, vkCreateBuffer(context.device, &info, nullptr, &b.buffer), "vkCreateBuffer",
               info.size);
  try {
    VkMemoryRequirements needs;
    vkGetBufferMemoryRequirements(context.device, b.buffer, &needs);
    VkMemoryAllocateInfo alloc{};
    alloc.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO;
    alloc.allocationSize = needs.size;
    alloc.memoryTypeIndex = context.memory_type(needs.memoryTypeBits, flags);
    check_memory(context, vkAllocateMemory(context.device, &alloc, nullptr, &b.memory),
                 "vkAllocateMemory", needs.size);
    check_vk(vkBindBufferMemory(context.device, b.buffer, b.memory, 0), "vkBindBufferMemory");
  } catch (...) {
    free_buffer(context.device, b);
    throw;
  }
  return b;
}

void free_buffer(VkDevice device, RawBuffer& b) {
  vkDestroyBuffer(device, b.buffer, nullptr);
  vkFreeMemory(device, b.memory, nullptr);
  b = {};
}

namespace {

// A host-visible buffer for one copy, released when it goes out of scope.
struct Staging {
  Context::Impl& context;
  RawBuffer raw;
  Staging(Context::Impl& c, size_t bytes, VkBufferUsageFlags usage)
      : context(c),
        raw(make_buffer(
            c, bytes, usage,
            VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT)) {}
  ~Staging() { free_buffer(context.device, raw); }
  Staging(const Staging&) = delete;
  Staging& operator=(const Staging&) = delete;

  void* map(size_t bytes) {
    void* p = nullptr;
    check_vk(vkMapMemory(context.device, raw.memory, 0, bytes, 0, &p), "vkMapMemory");
    return p;
  }
  void unmap() { vkUnmapMemory(context.device, raw.memory); }
};

}  // namespace

Buffer::Buffer(Context& context, size_t bytes) : impl_(std::make_unique<Impl>()) {
  impl_->context = &context.impl();
  impl_->raw = make_buffer(context.impl(), bytes,
                           VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                               VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                           VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
  impl_->bytes = bytes;
}

Buffer::~Buffer() = default;
Buffer::Buffer(Buffer&&) noexcept = default;
Buffer& Buffer::operator=(Buffer&&) noexcept = default;

size_t Buffer::bytes() const { return impl_->bytes; }

View::View(const Buffer& buffer) : buffer_(&buffer), bytes_(buffer.bytes()) {}

View::View(const Buffer& buffer, size_t offset, size_t bytes)
    : buffer_(&buffer), offset_(offset), bytes_(bytes) {
  check(offset <= buffer.bytes() && bytes <= buffer.bytes() - offset, "Vulkan: a view of ", bytes,
        " bytes at offset ", offset, " of a buffer of ", buffer.bytes());
}

namespace {
void check_range(const char* what, size_t bytes, size_t offset, size_t size) {
  check(offset <= size && bytes <= size - offset, "Vulkan: ", what, " of ", bytes,
        " bytes at offset ", offset, " of a buffer of ", size);
}
}  // namespace

void Buffer::upload(std::span<const std::byte> data, size_t offset) {
  check_range("upload", data.size(), offset, impl_->bytes);
  if (data.empty()) return;
  Context::Impl& c = *impl_->context;
  Staging staging(c, data.size(), VK_BUFFER_USAGE_TRANSFER_SRC_BIT);
  std::memcpy(staging.map(data.size()), data.data(), data.size());
  staging.unmap();
  c.submit([&](VkCommandBuffer cmd) {
    const VkBufferCopy region{0, offset, data.size()};
    vkCmdCopyBuffer(cmd, staging.raw.buffer, impl_->raw.buffer, 1, &region);
  });
}

void Buffer::download(std::span<std::byte> data, size_t offset) const {
  check_range("download", data.size(), offset, impl_->bytes);
  if (data.empty()) return;
  Context::Impl& c = *impl_->context;
  Staging staging(c, data.size(), VK_BUFFER_USAGE_TRANSFER_DST_BIT);
  c.submit([&](VkCommandBuffer cmd) {
    const VkBufferCopy region{offset, 0, data.size()};
    vkCmdCopyBuffer(cmd, impl_->raw.buffer, staging.raw.buffer, 1, &region);
    // The copy's writes made visible to the host's reads below.
    VkMemoryBarrier to_host{};
    to_host.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER;
    to_host.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
    to_host.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
    vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1,
                         &to_host, 0, nullptr, 0, nullptr);
  });
  std::memcpy(data.data(), staging.map(data.size()), data.size());
  staging.unmap();
}

Buffer upload_floats(Context& context, std::span<const float> values) {
  Buffer b(context, values.size_bytes());
  b.upload(std::as_bytes(values));
  return b;
}

std::vector<float> download_floats(const View& view, size_t count) {
  check(count * sizeof(float) <= view.bytes(), "Vulkan: download of ", count,
        " floats from a view of ", view.bytes(), " bytes");
  std::vector<float> v(count);
  view.buffer().download(std::as_writable_bytes(std::span<float>(v)), view.offset());
  return v;
}

}  // namespace tinylm::kernels::vulkan
