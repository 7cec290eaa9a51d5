#pragma once
// The Vulkan compute runtime: a Context opens one device with one compute queue; a Buffer is
// device-local memory on it, filled and read through staging copies. Ops (kernels/vulkan/ops.h)
// record their dispatches on a Context; they run, in order, when the host next reads a result.
//
// No Vulkan header here (the state lives behind pointers to implementation), so code that
// includes this builds without knowing Vulkan. A Context is used from one thread at a time;
// its Buffers must be destroyed before it.
//
// TINYLM_VULKAN_VALIDATION=1 turns on the Khronos validation layer (vulkan-validationlayers)
// for the Contexts made afterwards; every warning and error it reports is recorded.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "tinylm/kernels/vulkan/devices.h"

namespace tinylm::kernels::vulkan {

enum class Validation { from_environment, on, off };

class Context {
 public:
  // Opens device `index` of list_devices(). Throws Error when there is no such device, it
  // lacks Vulkan 1.2 or a compute queue, or any Vulkan call fails.
  explicit Context(int index = 0, Validation validation = Validation::from_environment);
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  const DeviceInfo& device() const;
  // Ops record their work and return; it runs when results are read back (Buffer::download),
  // or here: submits everything recorded and waits for it. A device fault surfaces here, or at
  // the download, as an Error.
  void finish();
  bool validation() const;

  // A sequence of ops recorded once and run again and again (a decode step): record() runs
  // `ops`, whose dispatches go into the Recording instead of the queue (nothing runs then; ops
  // that upload or download are refused), and replay() runs them, after everything before, and
  // waits. The dispatches keep the buffers and push constants they were given: the owner
  // changes what the buffers hold between replays (uploads), and records again when it would
  // pass other buffers or sizes. A Recording must not outlive its buffers or the Context.
  class Recording;
  Recording record(const std::function<void()>& ops);
  void replay(const Recording& recording);
  // The validation layer's warnings and errors so far, oldest first.
  std::vector<std::string> validation_messages() const;

  struct Impl;
  Impl& impl() { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

class Context::Recording {
 public:
  Recording();
  ~Recording();
  Recording(Recording&&) noexcept;
  Recording& operator=(Recording&&) noexcept;
  explicit operator bool() const { return impl_ != nullptr; }
  int dispatches() const;

  struct Impl;
  Impl& impl() const { return *impl_; }

 private:
  friend class Context;
  std::unique_ptr<Impl> impl_;
};

class Buffer {
 public:
  // bytes of device-local memory (at least 1 is allocated), contents undefined.
  Buffer(Context& context, size_t bytes);
  ~Buffer();
  Buffer(Buffer&&) noexcept;
  Buffer& operator=(Buffer&&) noexcept;

  size_t bytes() const;
  // Copies the bytes of data to the buffer from byte `offset` on (upload) or from there
  // (download), after the ops recorded before, and waits.
  void upload(std::span<const std::byte> data, size_t offset = 0);
  void download(std::span<std::byte> data, size_t offset = 0) const;

  struct Impl;
  const Impl& impl() const { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

// A byte range of a Buffer: what ops read and write. A Buffer converts to its whole range (also
// from a pointer, so a Dispatch can list {&y, &x}); a model's tensors can be Views into a few
// large Buffers at offsets that are multiples of kViewAlignment (every device's storage-buffer
// offset alignment divides 256).
inline constexpr size_t kViewAlignment = 256;
class View {
 public:
  View(const Buffer& buffer);  // NOLINT(google-explicit-constructor): a Buffer is its whole range
  View(const Buffer* buffer) : View(*buffer) {}  // NOLINT(google-explicit-constructor)
  // bytes from offset; throws Error unless the range lies within the buffer.
  View(const Buffer& buffer, size_t offset, size_t bytes);

  const Buffer& buffer() const { return *buffer_; }
  size_t offset() const { return offset_; }
  size_t bytes() const { return bytes_; }

 private:
  const Buffer* buffer_;
  size_t offset_ = 0, bytes_ = 0;
};

// A float buffer made from host values, and read back.
Buffer upload_floats(Context& context, std::span<const float> values);
// count floats from the view's start (a Buffer: its start).
std::vector<float> download_floats(const View& view, size_t count);

}  // namespace tinylm::kernels::vulkan
