#include "io/append_record.h"

#include <sys/types.h>
#include <unistd.h>

#include <cerrno>

namespace ff {

int append_record(int fd, const void* data, size_t bytes) {
  const auto* p = static_cast<const char*>(data);
  const off_t before = ::lseek(fd, 0, SEEK_END);
  size_t done = 0;
  while (done < bytes) {
    const ssize_t n = ::write(fd, p + done, bytes - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = n < 0 ? errno : ENOSPC;
      // If even the cut fails the record stays torn, and the reader's next open drops it.
      if (before >= 0) (void)!::ftruncate(fd, before);
      return err;
    }
    done += size_t(n);
  }
  return 0;
}

}  // namespace ff
