#pragma once
// Output on stdout is checked: a write that fails (a full disk, a closed descriptor) is a
// one-line error and exit 1, never output silently lost (docs/cli.md, "Exit codes").
#include <string_view>

namespace tinylm::cli {

// Puts /dev/null on any of descriptors 0, 1 and 2 that is closed (`tinylm ... >&-`), opened
// the wrong way round so that every read of stdin and every write of stdout fails as it
// would on the closed descriptor. Without this the first file a command opens would become
// its stdout, and its printing would land in that file. Call first in main.
void hold_standard_descriptors();

// Flushes stdout; throws Error("stdout: write failed: REASON") when that or any earlier
// write to it failed. Streaming commands call it after each piece, so they stop at the first
// lost byte instead of computing output nobody gets.
void flush_stdout();

// At the end of main: flushes stdout and, when a command that succeeded (code 0) lost output
// on it, prints the one-line error and returns kExitRuntime; otherwise returns code.
int finish_stdout(int code);

}  // namespace tinylm::cli
