#include "stats/registry.h"

#include <stdexcept>

namespace kdsim::stats {

void Registry::check(const std::string& path) const {
    bool ok = !path.empty() && path.front() != '/' && path.back() != '/' && path.find("//") == std::string::npos;
    for (char c : path) ok = ok && static_cast<unsigned char>(c) > ' ';
    if (!ok) throw std::logic_error("statistic path '" + path + "' has an empty component or a blank");
    if (paths_.count(path)) throw std::logic_error("statistic '" + path + "' registered twice");
}

void Registry::add(std::string path, const std::uint64_t& counter, std::string_view unit, std::string_view description) {
    check(path);
    paths_.insert(path);
    entries_.push_back(Entry{std::move(path), std::string(unit), std::string(description), &counter, {}});
}

void Registry::add(std::string path, std::function<double()> getter, std::string_view unit, std::string_view description) {
    check(path);
    if (!getter) throw std::logic_error("statistic '" + path + "' has no getter");
    paths_.insert(path);
    entries_.push_back(Entry{std::move(path), std::string(unit), std::string(description), nullptr, std::move(getter)});
}

} // namespace kdsim::stats
