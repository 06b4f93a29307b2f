// Output files (report/output_file.h): a regular or new file is written to a temporary file in
// its directory, fsynced and renamed into place, so readers see the old file or the complete new
// one; a device, FIFO or /proc/self/fd link is written in place and never replaced. Temporary
// files are removed on failure, on SIGINT/TERM/HUP/PIPE, and (after a SIGKILL) by the next writer
// of the same path.
#include "report/output_file.h"

#include <fmt/format.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <system_error>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace kdsim::report {

namespace fs = std::filesystem;

namespace {

[[noreturn]] void fail(const fs::path& path, std::string_view step, int err) {
    const std::string why = std::generic_category().message(err);
    throw std::runtime_error(step.empty() ? fmt::format("cannot write {}: {}", path.string(), why)
                                          : fmt::format("cannot write {}: {}: {}", path.string(), step, why));
}

// Where an output path leads once its symbolic links are followed (at most 40, as the kernel's
// MAXSYMLINKS): a regular file or a new name to replace through a temporary file, or a stream
// to write in place. `err` != 0: refused, `step` says why.
struct Destination {
    bool in_place = false;
    fs::path target;
    std::string step;
    int err = 0;
};

// A link in /proc (/proc/self/fd/1, and /dev/stdout or /dev/fd/N through it) names an open file
// of the process, not a path: its target cannot be replaced, only written.
bool in_proc(const fs::path& dir) {
    std::error_code ec;
    fs::path c = fs::canonical(dir.empty() ? fs::path(".") : dir, ec);
    if (ec) return false;
    auto it = c.begin();
    return it != c.end() && ++it != c.end() && *it == "proc";
}

Destination resolve(const fs::path& path) {
    fs::path p = path;
    for (int hop = 0; hop <= 40; ++hop) {
        struct stat st;
        if (::lstat(p.c_str(), &st) != 0) {
            if (errno == ENOENT) return {false, p, "", 0}; // a new file; its directory is checked by the caller
            return {false, p, "looking it up", errno};
        }
        if (S_ISLNK(st.st_mode)) {
            if (in_proc(p.parent_path())) return {true, path, "", 0};
            std::error_code ec;
            fs::path t = fs::read_symlink(p, ec);
            if (ec) return {false, p, "reading the symbolic link", ec.value()};
            p = t.is_absolute() ? t : p.parent_path() / t;
            continue;
        }
        if (S_ISREG(st.st_mode)) return {false, p, "", 0};
        if (S_ISDIR(st.st_mode)) return {false, p, "", EISDIR};
        return {true, path, "", 0}; // character or block device, FIFO, socket
    }
    return {false, path, "following symbolic links", ELOOP};
}

fs::path directory_of(const fs::path& file) { return file.parent_path().empty() ? fs::path(".") : file.parent_path(); }

// Temporary files of live AtomicFiles, for the signal handler: lock-free slots holding
// malloc'ed names (a handler may only load them and call unlink).
constexpr int TEMP_SLOTS = 64;
std::atomic<const char*> temp_slots[TEMP_SLOTS];
static_assert(std::atomic<const char*>::is_always_lock_free);

int register_temp(const fs::path& p) {
    char* name = ::strdup(p.c_str());
    if (!name) return -1;
    for (int i = 0; i < TEMP_SLOTS; ++i) {
        const char* none = nullptr;
        if (temp_slots[i].compare_exchange_strong(none, name)) return i;
    }
    std::free(name); // more live temporary files than slots: this one is not removed on a signal
    return -1;
}

void unregister_temp(int& slot) {
    if (slot < 0) return;
    std::free(const_cast<char*>(temp_slots[slot].exchange(nullptr)));
    slot = -1;
}

extern "C" void remove_temps_and_reraise(int sig) {
    const int saved = errno;
    for (auto& s : temp_slots)
        if (const char* name = s.load()) ::unlink(name);
    errno = saved;
    ::signal(sig, SIG_DFL);
    ::raise(sig); // delivered when the handler returns: the process ends by `sig`, as without us
}

// Removes `.NAME.tmp.PID.N` files in `dir` left by a writer of NAME that no longer runs (killed
// by SIGKILL, or the machine stopped). A live PID, even a reused one, keeps its file.
void sweep_stale_temps(const fs::path& dir, const std::string& name) {
    const std::string prefix = "." + name + ".tmp.";
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
        const std::string f = it->path().filename().string();
        if (f.size() <= prefix.size() || f.compare(0, prefix.size(), prefix) != 0) continue;
        const char* s = f.c_str() + prefix.size();
        char* dot = nullptr;
        errno = 0;
        const long pid = std::strtol(s, &dot, 10);
        if (errno != 0 || dot == s || *dot != '.' || pid <= 0 || pid == ::getpid()) continue;
        const char* n = dot + 1;
        if (*n == '\0' || std::strspn(n, "0123456789") != std::strlen(n)) continue;
        if (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) ::unlink(it->path().c_str());
    }
}

// Distinguishes temporary names of concurrent writers in one process; the pid separates processes.
std::atomic<unsigned> temp_counter{0};

} // namespace

std::string check_writable(const fs::path& path) {
    const Destination d = resolve(path);
    if (d.err == EISDIR) return d.target.string() + " is a directory";
    if (d.err != 0) return path.string() + ": " + d.step + ": " + std::generic_category().message(d.err);
    if (d.in_place) {
        if (::access(path.c_str(), W_OK) != 0) return path.string() + " is not writable";
        return "";
    }
    if (d.target.filename().empty()) return path.string() + " is a directory";
    std::error_code ec;
    const fs::path dir = directory_of(d.target);
    if (!fs::is_directory(dir, ec)) return "the directory " + dir.string() + " does not exist";
    if (::access(dir.c_str(), W_OK) != 0) return "the directory " + dir.string() + " is not writable";
    return "";
}

fs::path output_identity(const fs::path& path) {
    const Destination d = resolve(path);
    if (d.err != 0 || d.in_place) return path;
    std::error_code ec;
    fs::path c = fs::weakly_canonical(d.target, ec);
    return ec ? d.target : c;
}

AtomicFile::AtomicFile(const fs::path& path) : path_(path) {
    const Destination d = resolve(path);
    if (d.err != 0) fail(path, d.step, d.err);
    if (d.in_place) {
        // O_APPEND: through /dev/stdout into a file the shell opened, what the process printed stays.
        fd_ = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC | O_NOCTTY);
        if (fd_ < 0) fail(path, "opening it", errno);
        in_place_ = true;
        return;
    }
    target_ = d.target;
    if (target_.filename().empty()) fail(path, "no file name", EISDIR);
    const fs::path dir = directory_of(target_);
    sweep_stale_temps(dir, target_.filename().string());
    // O_EXCL with mode 0666 lets the umask decide the permissions of a new file, as for a plain
    // open(); a replaced file keeps its own.
    for (int attempt = 0; fd_ < 0; ++attempt) {
        temp_ = dir / fmt::format(".{}.tmp.{}.{}", target_.filename().string(), ::getpid(), temp_counter.fetch_add(1));
        fd_ = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd_ < 0 && (errno != EEXIST || attempt >= 100)) {
            temp_.clear();
            fail(path, "creating a temporary file", errno);
        }
    }
    temp_slot_ = register_temp(temp_);
    struct stat st;
    if (::stat(target_.c_str(), &st) == 0 && S_ISREG(st.st_mode)) ::fchmod(fd_, st.st_mode & 07777);
}

AtomicFile::~AtomicFile() {
    if (fd_ >= 0) ::close(fd_);
    if (!temp_.empty()) ::unlink(temp_.c_str());
    unregister_temp(temp_slot_);
}

void AtomicFile::abandon(std::string_view step, int err) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    if (!temp_.empty()) ::unlink(temp_.c_str());
    temp_.clear();
    unregister_temp(temp_slot_);
    fail(path_, step, err);
}

void AtomicFile::write(std::string_view text) {
    if (fd_ < 0 || closed_) abandon("writing after close", EBADF);
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

void AtomicFile::close() {
    if (closed_) return;
    if (!in_place_ && ::fsync(fd_) != 0) abandon("fsync", errno);
    const int fd = fd_;
    fd_ = -1;
    closed_ = true;
    if (::close(fd) != 0) abandon("closing", errno);
}

void AtomicFile::commit() {
    close();
    if (in_place_) return;
    if (temp_.empty()) fail(path_, "committing twice", EINVAL);
    if (::rename(temp_.c_str(), target_.c_str()) != 0) abandon("renaming the temporary file into place", errno);
    temp_.clear();
    unregister_temp(temp_slot_);
    // Make the rename itself durable. The file is complete and in place by now, so a failure
    // here is not reported: undoing the rename would lose the previous file as well.
    int dir_fd = ::open(directory_of(target_).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir_fd >= 0) {
        ::fsync(dir_fd);
        ::close(dir_fd);
    }
}

void write_file_atomically(const fs::path& path, std::string_view text) {
    AtomicFile f(path);
    f.write(text);
    f.commit();
}

void remove_temporary_files_on_signals() {
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGPIPE}) {
        struct sigaction old {};
        if (::sigaction(sig, nullptr, &old) != 0 || old.sa_handler == SIG_IGN) continue; // nohup stays nohup
        struct sigaction sa {};
        sa.sa_handler = remove_temps_and_reraise;
        sigemptyset(&sa.sa_mask);
        ::sigaction(sig, &sa, nullptr);
    }
}

} // namespace kdsim::report
