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
    return results::resolve_ratio(r, c.metric, c.per);
}

} // namespace kdsim::runner
