// kdsim run --pcap DIR: which devices get a capture file, the checks before the run (functional
// mode only: in timing mode the tunnels seal no bytes), and the taps (capture/capture.h).
#pragma once

#include "capture/capture.h"
#include "system/config.h"
#include "system/system.h"

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace kdsim::cli {

class PcapPlan {
public:
    PcapPlan() = default;
    PcapPlan(const PcapPlan&) = delete;
    PcapPlan& operator=(const PcapPlan&) = delete;
    // Removes DIR again when this command created it and nothing was published into it.
    ~PcapPlan();
    // Why the run cannot be captured into `dir` ("" when it can), checked before anything is
    // written: a timing-mode run, a scenario without a network device, `dir` not a directory.
    // Creates `dir` when missing.
    std::string prepare(const std::string& dir, system::System& sys, const system::ScenarioConfig& cfg);
    // The files to write, in order: one <machine>-<ifname>.pcap per device, then esp_sa when an
    // ESP tunnel is captured.
    std::vector<std::filesystem::path> files() const;
    bool has_esp_sa() const { return !esp_sa_.empty(); }
    const std::string& esp_sa() const { return esp_sa_; }
    // Starts capturing device `i` into `file` (opened, not yet published); `taps` owns the tap
    // and must be destroyed before `file`.
    void attach(std::size_t i, report::AtomicFile& file, std::vector<std::unique_ptr<capture::DeviceTap>>& taps) const;

private:
    std::filesystem::path dir_;
    bool made_dir_ = false;
    std::vector<capture::TapPoint> points_;
    std::string esp_sa_;
};

} // namespace kdsim::cli
