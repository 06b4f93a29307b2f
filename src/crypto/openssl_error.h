// Turning a failed OpenSSL call into an exception that carries OpenSSL's own error text;
// shared by the digest and AEAD wrappers.
#pragma once

#include <string_view>

namespace kdsim::crypto::detail {

// Throws std::runtime_error "kdsim::crypto: <what> failed: <drained OpenSSL error queue>".
[[noreturn]] void throw_openssl_error(std::string_view what);

} // namespace kdsim::crypto::detail
