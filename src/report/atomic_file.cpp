// write_file_atomically and AtomicFile: temporary file in the target's directory, write, fsync,
// rename. Readers therefore see either the old file or the complete new one, never a partial file.
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

AtomicFile::AtomicFile(const std::filesystem::path& path) : path_(path) {
    if (path.filename().empty()) fail(path, "no file name", EISDIR);
    dir_ = path.parent_path();
    if (dir_.empty()) dir_ = ".";
    // O_EXCL with mode 0666 lets the umask decide the final permissions, as for a plain open().
    for (int attempt = 0; fd_ < 0; ++attempt) {
        temp_ = dir_ / fmt::format(".{}.tmp.{}.{}", path.filename().string(), ::getpid(), temp_counter.fetch_add(1));
        fd_ = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd_ < 0 && (errno != EEXIST || attempt >= 100)) fail(path, "creating a temporary file", errno);
    }
}

AtomicFile::~AtomicFile() {
    if (fd_ >= 0) {
        ::close(fd_);
        ::unlink(temp_.c_str());
    }
}

void AtomicFile::abandon(std::string_view step, int err) {
    ::close(fd_);
    fd_ = -1;
    ::unlink(temp_.c_str());
    fail(path_, step, err);
}

void AtomicFile::write(std::string_view text) {
    const char* p = text.data();
    std::size_t left = text.size();
    while (left > 0) {
        ssize_t n = ::write(fd_, p, left);
        if (n < 0) {
            if (errno == EINTR) continue;
            abandon("writing", errno);
        }
        p += n;
        left -= static_cast<std::size_t>(n);
    }
}

void AtomicFile::commit() {
    if (::fsync(fd_) != 0) abandon("fsync", errno);
    const int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) {
        int err = errno;
        ::unlink(temp_.c_str());
        fail(path_, "closing", err);
    }
    if (::rename(temp_.c_str(), path_.c_str()) != 0) {
        int err = errno;
        ::unlink(temp_.c_str());
        fail(path_, "renaming the temporary file into place", err);
    }
    // Make the rename itself durable. The file is complete and in place by now, so a failure
    // here is not reported: undoing the rename would lose the previous file as well.
    int dir_fd = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir_fd >= 0) {
        ::fsync(dir_fd);
        ::close(dir_fd);
    }
}

std::string check_writable(const std::filesystem::path& path) {
    namespace fs = std::filesystem;
    std::error_code ec;
    const fs::path dir = path.parent_path().empty() ? fs::path(".") : path.parent_path();
    if (!fs::is_directory(dir, ec)) return "the directory " + dir.string() + " does not exist";
    if (access(dir.c_str(), W_OK) != 0) return "the directory " + dir.string() + " is not writable";
    if (fs::is_directory(path, ec)) return path.string() + " is a directory";
    return "";
}

void write_file_atomically(const std::filesystem::path& path, std::string_view text) {
    AtomicFile f(path);
    f.write(text);
    f.commit();
}

} // namespace kdsim::report
