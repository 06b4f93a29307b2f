// Self-describing statistics, in the spirit of gem5's ADD_STAT and the kernel's
// /proc/net/softnet_stat: the object that owns a counter registers it once, with a path, a unit
// and a one-line description. Counters stay plain integers that the model increments in place;
// the registry keeps only a pointer to each (or a getter, for a figure computed from the owner's
// state) and reads them when the run's results are collected. Nothing here is on a hot path.
//
// Paths name where a figure lives: "<machine>/cpu0/softirq/restarts", "<machine>/netdev/eth0/
// rx_dropped", "<machine>/tunnel/wg0/auth_failures": non-empty components without blanks, joined
// by '/' (docs/report-format.md lists them).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

namespace kdsim::stats {

struct Entry {
    std::string path;
    std::string unit;        // "count", "cycles", "bytes", "us", ...
    std::string description; // one line
    const std::uint64_t* counter = nullptr; // read at collect time, or
    std::function<double()> getter;         // for a figure computed from the owner's state

    bool integral() const { return counter != nullptr; }
    double value() const { return counter ? static_cast<double>(*counter) : getter(); }
};

class Registry {
public:
    Registry() = default;
    Registry(const Registry&) = delete;
    Registry& operator=(const Registry&) = delete;

    // Registers a counter; the object holding it must outlive the registry's last read.
    // Throws std::logic_error on a malformed or already registered path (a model bug).
    void add(std::string path, const std::uint64_t& counter, std::string_view unit, std::string_view description);
    void add(std::string path, std::function<double()> getter, std::string_view unit, std::string_view description);

    // In registration order.
    const std::vector<Entry>& entries() const { return entries_; }

private:
    void check(const std::string& path) const;
    std::vector<Entry> entries_;
    std::unordered_set<std::string> paths_;
};

// A place in the tree: what an owner's register_stats() receives. Copyable and cheap.
class Scope {
public:
    Scope(Registry& reg, std::string prefix) : reg_(&reg), prefix_(std::move(prefix)) {}

    Scope sub(std::string_view name) const { return Scope(*reg_, prefix_ + "/" + std::string(name)); }
    const std::string& prefix() const { return prefix_; }

    const Scope& counter(std::string_view name, const std::uint64_t& c, std::string_view unit,
                         std::string_view description) const {
        reg_->add(prefix_ + "/" + std::string(name), c, unit, description);
        return *this;
    }
    const Scope& value(std::string_view name, std::function<double()> getter, std::string_view unit,
                       std::string_view description) const {
        reg_->add(prefix_ + "/" + std::string(name), std::move(getter), unit, description);
        return *this;
    }

private:
    Registry* reg_;
    std::string prefix_;
};

} // namespace kdsim::stats
