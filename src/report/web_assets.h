// The JavaScript the HTML report inlines: the minified bundles of vega, vega-lite and vega-embed
// as npm installed them at configure time (src/report/web/package-lock.json pins the versions),
// compiled into the binary so `kdsim report` works anywhere and its page opens offline.
#pragma once

#include <string_view>

namespace kdsim::report::web {

std::string_view vega_js();
std::string_view vega_lite_js();
std::string_view vega_embed_js();
// "vega 6.4.0, vega-lite 6.4.3, vega-embed 7.3.0": the versions embedded, for the page's footer.
std::string_view versions();

} // namespace kdsim::report::web
