// gzip (RFC 1952) compression of output written in pieces, by zlib: a `--trace x.json.gz` is
// compressed as it is written, never held whole. The header carries no time stamp or name, so
// the same input gives the same bytes.
#pragma once

#include <functional>
#include <string>
#include <string_view>

typedef struct z_stream_s z_stream;

namespace kdsim::report {

class GzipWriter {
public:
    // Compressed bytes go to `sink`, in pieces of up to 256 KiB.
    explicit GzipWriter(std::function<void(std::string_view)> sink);
    ~GzipWriter();
    GzipWriter(const GzipWriter&) = delete;
    GzipWriter& operator=(const GzipWriter&) = delete;

    void write(std::string_view text);
    // Writes the rest and the gzip trailer; call once, after the last write().
    void finish();

private:
    void deflate_all(int flush);
    std::function<void(std::string_view)> sink_;
    z_stream* z_;
    std::string buf_;
};

// True for a path whose name ends in ".gz".
bool gzip_path(std::string_view path);

} // namespace kdsim::report
