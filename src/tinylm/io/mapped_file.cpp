#include "tinylm/io/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <utility>

#include "tinylm/core/error.h"

namespace tinylm::io {

MappedFile MappedFile::open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail(path, ": cannot open: ", std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    fail(path, ": not a regular file");
  }
  MappedFile f;
  const size_t size = static_cast<size_t>(st.st_size);
  if (size > 0) {
    void* m = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (m == MAP_FAILED) {
      const int err = errno;
      ::close(fd);
      fail(path, ": cannot map: ", std::strerror(err));
    }
    f.map_ = m;
    f.size_ = size;
  }
  ::close(fd);
  return f;
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : map_(std::exchange(other.map_, nullptr)), size_(std::exchange(other.size_, 0)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    if (map_) ::munmap(map_, size_);
    map_ = std::exchange(other.map_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

MappedFile::~MappedFile() {
  if (map_) ::munmap(map_, size_);
}

void populate(std::span<const std::byte> bytes) {
  if (bytes.empty()) return;
  const long page_size = sysconf(_SC_PAGESIZE);
  const uintptr_t page = static_cast<uintptr_t>(page_size > 0 ? page_size : 4096);
  const uintptr_t lo = reinterpret_cast<uintptr_t>(bytes.data()) / page * page;
  const uintptr_t hi = reinterpret_cast<uintptr_t>(bytes.data() + bytes.size());
#if defined(MADV_POPULATE_READ)
  if (madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_POPULATE_READ) == 0) return;
#endif
  // Older kernels: touch a byte of every page the bytes cover.
  volatile std::byte sink{};
  for (uintptr_t p = std::max(lo, reinterpret_cast<uintptr_t>(bytes.data())); p < hi;
       p = (p / page + 1) * page)
    sink = *reinterpret_cast<const std::byte*>(p);
  (void)sink;
}

std::shared_ptr<FileBytes> FileBytes::open(const std::string& path) {
  auto f = std::make_shared<FileBytes>();
  f->name = path;
  f->map = MappedFile::open(path);
  return f;
}

std::shared_ptr<FileBytes> FileBytes::copy(std::span<const std::byte> bytes,
                                           const std::string& name) {
  auto f = std::make_shared<FileBytes>();
  f->name = name;
  f->owned.assign(bytes.begin(), bytes.end());
  return f;
}

std::byte* FileBytes::writable(std::span<const std::byte> part) {
  const std::span<const std::byte> all = bytes();
  check(part.data() >= all.data() && part.data() + part.size() <= all.data() + all.size(), name,
        ": a range outside the file made writable");
  if (mapped() && !part.empty()) {
    const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
    const uintptr_t lo = reinterpret_cast<uintptr_t>(part.data()) / page * page;
    const uintptr_t hi = reinterpret_cast<uintptr_t>(part.data() + part.size());
    if (::mprotect(reinterpret_cast<void*>(lo), hi - lo, PROT_READ | PROT_WRITE) != 0)
      fail(name, ": cannot make mapped bytes writable: ", std::strerror(errno));
  }
  return const_cast<std::byte*>(part.data());  // (this process's: private pages or a copy)
}

void FileBytes::populate(std::span<const std::byte> part) const {
  if (mapped()) io::populate(part);
}

}  // namespace tinylm::io
