#pragma once
// What an output path already names decides how a writer treats it (docs/limits.md, "Output
// files"): a new name or a regular file is replaced atomically (AtomicFile's temporary and
// rename); a character device or a FIFO (/dev/null, a pipe, a terminal) is written in place,
// streamed, since renaming over it would put a regular file where the device was; and
// /dev/stdout, /dev/fd/N and /proc/self/fd/N write to the file that descriptor has open, whatever
// it is. A directory, a block device or a socket is refused.
#include <string>

namespace tinylm::io {

enum class OutputMode {
  replace,  // nothing there, a regular file, or a symlink (the link is replaced, not its target)
  stream,   // written in place: no temporary, no rename
};

// How `path` is to be written. Throws Error naming the path when it is nothing tinylm writes
// (a directory, a block device, a socket). A symlink is followed to decide: one to a device or
// a FIFO is streamed through; one to a regular file (or dangling) is replaced as a link.
OutputMode output_mode(const std::string& path);

// Opens `path` (whose output_mode is stream) for writing in place; a link to one of this
// process's own descriptors (/dev/stdout) gives a duplicate of it, sharing its offset. Returns
// the descriptor, or -1 with errno set. Opening a FIFO waits for its reader, as a shell's
// redirection does.
int open_in_place(const std::string& path);

}  // namespace tinylm::io
