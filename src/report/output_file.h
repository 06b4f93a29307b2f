// Output files of kdsim (results JSON, CSV, run trace, comparisons, profiles): where they go and
// how they are written so that a reader never sees half a file and nothing on the system is
// harmed by a path given on the command line (docs/reliability.md).
//
// - A path that does not exist yet, or names a regular file (directly or through symbolic
//   links), is written to a temporary file beside the final one, fsynced and renamed into place.
//   A symbolic link stays a link: its target is replaced.
// - Anything else that can be opened for writing (a character device such as /dev/null, a FIFO,
//   a terminal, /dev/stdout and the /proc/self/fd links) is written in place, appended to, and
//   never replaced or removed.
// - A directory, a missing or unwritable directory, or a loop of links is refused.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

namespace kdsim::report {

// Why an output file could not be written at `path`, or "" when it can: checked before a long
// run that ends by writing it. Creates nothing.
std::string check_writable(const std::filesystem::path& path);

// The file `path` designates once its symbolic links are followed, for telling two output options
// apart ("--json x --csv x"): the final regular file or new path, or `path` itself for a stream.
std::filesystem::path output_identity(const std::filesystem::path& path);

// Writes `text` to `path` as described above. On any failure nothing is left at `path` or in
// its directory, and std::runtime_error names the path and the errno text. An existing file at
// `path` is replaced only on success; its permission bits are kept.
void write_file_atomically(const std::filesystem::path& path, std::string_view text);

// The same, for output written in pieces or together with other files. The constructor opens the
// destination (creating the temporary file, or opening the stream) and throws for a path that
// cannot be written, so a command can refuse it before its run. write() appends, close() makes
// the written bytes durable (fsync) without publishing them, commit() renames the temporary file
// into place. Destroyed uncommitted, it removes the temporary file and leaves `path` untouched.
// Every failure throws std::runtime_error naming the path and the errno text.
class AtomicFile {
public:
    explicit AtomicFile(const std::filesystem::path& path);
    ~AtomicFile();
    AtomicFile(const AtomicFile&) = delete;
    AtomicFile& operator=(const AtomicFile&) = delete;

    // True for a stream written in place: what is written cannot be taken back.
    bool in_place() const { return in_place_; }
    const std::filesystem::path& path() const { return path_; }
    void write(std::string_view text);
    void close();
    void commit();

private:
    [[noreturn]] void abandon(std::string_view step, int err);
    std::filesystem::path path_;   // as given
    std::filesystem::path target_; // the regular file to replace (links followed)
    std::filesystem::path temp_;
    int fd_ = -1;
    int temp_slot_ = -1;
    bool in_place_ = false;
    bool closed_ = false;
};

// Installs handlers for SIGINT, SIGTERM, SIGHUP and SIGPIPE (those not ignored) that remove the
// temporary files of every live AtomicFile, then end the process by the same signal. Called once
// by the kdsim binary at start. A process killed by SIGKILL leaves its temporary file; the next
// AtomicFile for the same path removes it (`.NAME.tmp.PID.N` whose PID no longer runs).
void remove_temporary_files_on_signals();

} // namespace kdsim::report
