#pragma once
// One record appended whole to a log file that readers follow live (metrics.jsonl, TensorBoard
// event files), so a crash or a full disk leaves at most the last record torn, never one in the
// middle of the file.
#include <cstddef>

namespace ff {

// Writes the bytes at the end of fd's file (opened with O_APPEND), retrying short writes. If the
// write fails part-way (a full disk) the partial record is cut back off, so the file still ends
// with a complete one. Returns 0, or the errno of the failure (ENOSPC for a write of 0 bytes).
int append_record(int fd, const void* data, size_t bytes);

}  // namespace ff
