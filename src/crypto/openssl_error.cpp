#include "crypto/openssl_error.h"

#include <openssl/err.h>

#include <stdexcept>
#include <string>

namespace kdsim::crypto::detail {

void throw_openssl_error(std::string_view what) {
    std::string msg = "kdsim::crypto: ";
    msg += what;
    msg += " failed";
    bool first = true;
    while (unsigned long code = ERR_get_error()) {
        char buf[256];
        ERR_error_string_n(code, buf, sizeof buf);
        msg += first ? ": " : "; ";
        msg += buf;
        first = false;
    }
    if (first) msg += " (no OpenSSL error queued)";
    throw std::runtime_error(msg);
}

} // namespace kdsim::crypto::detail
