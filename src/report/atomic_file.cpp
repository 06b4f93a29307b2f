// write_file_atomically: temporary file in the target's directory, write, fsync, rename.
// Readers therefore see either the old file or the complete new one, never a partial file.
#include "report/report.h"

#include <fmt/format.h>

#include <atomic>
#include <cerrno>
#include <stdexcept>
#include <system_error>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace kdsim::report {

namespace {

[[noreturn]] void fail(const std::filesystem::path& path, std::string_view step, int err) {
    throw std::runtime_error(
        fmt::format("cannot write {}: {}: {}", path.string(), step, std::generic_category().message(err)));
}

// Distinguishes temporary names of concurrent writers in one process; the pid separates processes.
std::atomic<unsigned> temp_counter{0};

} // namespace

void write_file_atomically(const std::filesystem::path& path, std::string_view text) {
    if (path.filename().empty()) fail(path, "no file name", EISDIR);
    std::filesystem::path dir = path.parent_path();
    if (dir.empty()) dir = ".";

    // O_EXCL with mode 0666 lets the umask decide the final permissions, as for a plain open().
    std::filesystem::path temp;
    int fd = -1;
    for (int attempt = 0; fd < 0; ++attempt) {
        temp = dir / fmt::format(".{}.tmp.{}.{}", path.filename().string(), ::getpid(), temp_counter.fetch_add(1));
        fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd < 0 && (errno != EEXIST || attempt >= 100)) fail(path, "creating a temporary file", errno);
    }

    auto abandon = [&](std::string_view step, int err) {
        ::close(fd);
        ::unlink(temp.c_str());
        fail(path, step, err);
    };
    const char* p = text.data();
    std::size_t left = text.size();
    while (left > 0) {
        ssize_t n = ::write(fd, p, left);
        if (n < 0) {
            if (errno == EINTR) continue;
            abandon("writing", errno);
        }
        p += n;
        left -= static_cast<std::size_t>(n);
    }
    if (::fsync(fd) != 0) abandon("fsync", errno);
    if (::close(fd) != 0) {
        int err = errno;
        ::unlink(temp.c_str());
        fail(path, "closing", err);
    }
    if (::rename(temp.c_str(), path.c_str()) != 0) {
        int err = errno;
        ::unlink(temp.c_str());
        fail(path, "renaming the temporary file into place", err);
    }
    // Make the rename itself durable. The file is complete and in place by now, so a failure
    // here is not reported: undoing the rename would lose the previous file as well.
    int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir_fd >= 0) {
        ::fsync(dir_fd);
        ::close(dir_fd);
    }
}

} // namespace kdsim::report
