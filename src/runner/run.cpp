// One run of a scenario and the experiment tables' column values (runner/run.h).
#include "runner/run.h"

#include "results/lookup.h"
#include "system/system.h"

namespace kdsim::runner {

results::RunResults run_scenario(const std::filesystem::path& file, const scenario::LoadOptions& options) {
    system::ScenarioConfig cfg = scenario::load_scenario(file, options);
    system::System sys(cfg);
    return sys.run();
}

std::optional<double> column_value(const results::RunResults& r, const scenario::ExperimentColumn& c) {
    std::optional<double> v = results::resolve_sum(r, c.metric);
    if (!v || c.per.empty()) return v;
    std::optional<double> per = results::resolve_sum(r, c.per);
    if (!per || *per == 0) return std::nullopt;
    return *v / *per;
}

} // namespace kdsim::runner
