#pragma once
// Writes go to a fresh temporary file beside PATH (PATH.tmp.<pid>.<random>, created with
// O_CREAT | O_EXCL | O_NOFOLLOW, so nothing planted under a name we might pick is ever written
// through) and are renamed over PATH on commit(), so a crash or an error never leaves a
// half-written file where a good one was. Without commit() the temporary file is removed.
// commit() syncs the file before the rename and the directory after it, so once it returns
// the new file survives a power loss too. A SIGKILL mid-write leaves the old PATH whole and an
// orphaned temporary, which the next successful write to PATH removes (its pid is gone).
//
// PATH itself may be a symlink: the rename replaces the link with the new file; the file it
// pointed to is not touched. A PATH that is (or links to) a character device or a FIFO, or
// that is /dev/stdout or /dev/fd/N, is written in place instead, streamed, with no temporary
// and no rename; a directory, a block device or a socket is refused (io/output_target.h).
//
// Large files are handed to the disk while they are written (every 32 MiB, without waiting
// for it): otherwise the kernel holds the dirty pages until commit()'s fsync, and writing a
// checkpoint takes the copy plus the whole disk write instead of the longer of the two.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <vector>

namespace tinylm::io {

class AtomicFile {
 public:
  explicit AtomicFile(std::string path);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(std::span<const std::byte> bytes);
  // Flush, fsync, rename, fsync the directory, then remove the stale temporaries of this
  // path; throws Error naming the path.
  void commit();

  const std::string& temp_path() const { return tmp_; }

 private:
  void start_writeback();
  void commit_in_place();

  std::string path_, tmp_;  // tmp_ empty when written in place
  bool in_place_ = false;
  std::FILE* f_ = nullptr;
  size_t written_ = 0, handed_to_disk_ = 0;  // bytes
};

// Writes `bytes` to path through an AtomicFile.
void write_file_atomic(const std::string& path, std::span<const std::byte> bytes);

// Copies the regular file `from` to `to` through an AtomicFile.
void copy_file_atomic(const std::string& from, const std::string& to);

// Removes the temporaries AtomicFile (and StagedDir) left beside `path` when their process
// died: entries named PATH.tmp.<pid>[.<suffix>] (and .NAME.staging.<pid>.<suffix>) whose
// <pid> is no running process. Plain files, symlinks (the link, never its target) and, for
// staging directories, their contents. Returns how many entries were removed.
int remove_stale_temporaries(const std::string& path);

// Checks, before any long work, that `path` can be written as an output file: it is not a
// directory, a block device or a socket, its directory exists and a file can be created in it,
// and the filesystem has about `expected_bytes` free; a device or a FIFO, written in place,
// must be writable. Throws Error naming the path and the problem.
void probe_output(const std::string& path, uint64_t expected_bytes = 0);

// fsync(2) on a file or a directory (a directory's sync makes the renames and creations in it
// durable). Throws Error naming the path. A filesystem that cannot sync directories (EINVAL)
// is not an error: there is nothing more to do there.
void fsync_path(const std::string& path);

// The directory that holds path ("." for a bare name), for syncing after a rename.
std::string parent_dir(const std::string& path);

}  // namespace tinylm::io
