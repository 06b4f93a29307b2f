// CSV: one row per numeric metric, in the order of detail::flatten().
#include "report/report.h"

#include "report/format.h"
#include "report/rows.h"

namespace kdsim::report {

namespace {

// RFC 4180: a field with a comma, quote or line break is quoted, and quotes are doubled.
std::string field(std::string_view s) {
    if (s.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(s);
    std::string out = "\"";
    for (char c : s) {
        if (c == '"') out += '"';
        out += c;
    }
    out += '"';
    return out;
}

} // namespace

std::string to_csv(const results::RunResults& r) {
    std::string out = "section,machine,cpu,workload,key,value,unit\n";
    for (const auto& row : detail::flatten(r)) {
        out += field(row.section) + ',' + field(row.machine) + ',' + (row.cpu ? std::to_string(*row.cpu) : "") + ',' +
               field(row.workload) + ',' + field(row.key) + ',' +
               (row.exact ? std::to_string(*row.exact) : detail::plain_number(row.value)) + ',' + field(row.unit) + '\n';
    }
    return out;
}

} // namespace kdsim::report
