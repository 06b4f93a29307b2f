// gzip output through zlib's deflate (see gzip.h).
#include "report/gzip.h"

#include <zlib.h>

#include <stdexcept>

namespace kdsim::report {

GzipWriter::GzipWriter(std::function<void(std::string_view)> sink) : sink_(std::move(sink)), z_(new z_stream{}) {
    // windowBits 15 + 16: a gzip wrapper, with zlib's default header (no name, mtime 0).
    if (deflateInit2(z_, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
        delete z_;
        throw std::runtime_error("gzip: zlib could not start a deflate stream");
    }
    buf_.resize(1u << 18);
}

GzipWriter::~GzipWriter() {
    deflateEnd(z_);
    delete z_;
}

void GzipWriter::deflate_all(int flush) {
    int rc;
    do {
        z_->next_out = reinterpret_cast<Bytef*>(buf_.data());
        z_->avail_out = static_cast<uInt>(buf_.size());
        rc = deflate(z_, flush);
        if (rc == Z_STREAM_ERROR) throw std::runtime_error("gzip: zlib's deflate failed");
        if (const std::size_t n = buf_.size() - z_->avail_out; n) sink_(std::string_view(buf_.data(), n));
    } while (z_->avail_out == 0 || (flush == Z_FINISH && rc != Z_STREAM_END));
}

void GzipWriter::write(std::string_view text) {
    while (!text.empty()) {
        const std::size_t n = std::min<std::size_t>(text.size(), 1u << 30);
        z_->next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
        z_->avail_in = static_cast<uInt>(n);
        deflate_all(Z_NO_FLUSH);
        text.remove_prefix(n);
    }
}

void GzipWriter::finish() {
    z_->next_in = nullptr;
    z_->avail_in = 0;
    deflate_all(Z_FINISH);
}

bool gzip_path(std::string_view path) { return path.ends_with(".gz"); }

} // namespace kdsim::report
