#include "cli/pcap.h"

#include <system_error>

namespace kdsim::cli {

namespace fs = std::filesystem;

PcapPlan::~PcapPlan() {
    std::error_code ec;
    if (made_dir_ && fs::is_empty(dir_, ec)) fs::remove(dir_, ec);
}

std::string PcapPlan::prepare(const std::string& dir, system::System& sys, const system::ScenarioConfig& cfg) {
    if (cfg.mode != system::Mode::FUNCTIONAL)
        return "--pcap: the scenario runs in timing mode, where frames carry no bytes (no tunnel packet is "
               "sealed); run it with --mode functional (same timing, same results) to capture real frames";
    for (const system::System::Device& d : sys.devices())
        points_.push_back(capture::TapPoint{d.name, d.device, d.self, d.peer, d.channel, d.side});
    if (points_.empty()) return "--pcap: the scenario has no network device to capture";
    dir_ = dir;
    std::error_code ec;
    if (fs::exists(dir_, ec)) {
        if (!fs::is_directory(dir_, ec)) return "--pcap " + dir + ": not a directory";
    } else {
        fs::create_directories(dir_, ec);
        if (ec) return "--pcap " + dir + ": cannot create the directory: " + ec.message();
        made_dir_ = true;
    }
    esp_sa_ = capture::esp_sa_table(points_);
    return "";
}

std::vector<fs::path> PcapPlan::files() const {
    std::vector<fs::path> out;
    for (const capture::TapPoint& p : points_) out.push_back(dir_ / (p.name + ".pcap"));
    if (has_esp_sa()) out.push_back(dir_ / "esp_sa");
    return out;
}

void PcapPlan::attach(std::size_t i, report::AtomicFile& file, std::vector<std::unique_ptr<capture::DeviceTap>>& taps) const {
    taps.push_back(std::make_unique<capture::DeviceTap>(points_[i], file));
    points_[i].device->set_tap(taps.back().get());
}

} // namespace kdsim::cli
