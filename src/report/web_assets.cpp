// The bundles of report/web_assets.h, included byte for byte by the assembler's .incbin from the
// paths CMake passes (KDSIM_WEB_VEGA, ...: files under the build's web/node_modules).
#include "report/web_assets.h"

#define KDSIM_INCBIN(sym, file)                                                                    \
    __asm__(".section .rodata\n.global " #sym "_begin\n.global " #sym "_end\n.balign 16\n" #sym   \
            "_begin:\n.incbin \"" file "\"\n" #sym "_end:\n.byte 0\n.previous\n");                 \
    extern "C" const char sym##_begin[];                                                           \
    extern "C" const char sym##_end[];

KDSIM_INCBIN(kdsim_web_vega, KDSIM_WEB_VEGA)
KDSIM_INCBIN(kdsim_web_vega_lite, KDSIM_WEB_VEGA_LITE)
KDSIM_INCBIN(kdsim_web_vega_embed, KDSIM_WEB_VEGA_EMBED)

namespace kdsim::report::web {

std::string_view vega_js() { return {kdsim_web_vega_begin, static_cast<std::size_t>(kdsim_web_vega_end - kdsim_web_vega_begin)}; }
std::string_view vega_lite_js() {
    return {kdsim_web_vega_lite_begin, static_cast<std::size_t>(kdsim_web_vega_lite_end - kdsim_web_vega_lite_begin)};
}
std::string_view vega_embed_js() {
    return {kdsim_web_vega_embed_begin, static_cast<std::size_t>(kdsim_web_vega_embed_end - kdsim_web_vega_embed_begin)};
}
std::string_view versions() { return KDSIM_WEB_VERSIONS; }

} // namespace kdsim::report::web
