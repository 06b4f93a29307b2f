#include "scenario/figures.h"

#include "scenario/toml_reader.h"

#include <toml++/toml.h>

#include <stdexcept>
#include <string>

namespace kdsim::scenario {

namespace {

void walk(const toml::table& t, const std::string& prefix, std::map<std::string, RawFigure>& out) {
    for (auto&& [k, node] : t) {
        std::string key = prefix.empty() ? std::string(k.str()) : prefix + "." + std::string(k.str());
        if (const toml::table* sub = node.as_table()) {
            const toml::node* v = sub->get("value");
            const toml::node* u = sub->get("unit");
            const toml::node* s = sub->get("source");
            if (v && u && s && v->is_number() && u->is_string() && s->is_string()) {
                RawFigure f;
                f.value = v->value<double>().value_or(0);
                f.integral = v->is_integer();
                f.unit = u->as_string()->get();
                f.source = s->as_string()->get();
                out[key] = f;
            } else {
                walk(*sub, key, out);
            }
        } else if (const toml::value<bool>* b = node.as_boolean()) {
            RawFigure f;
            f.is_bool = true;
            f.value = b->get() ? 1 : 0;
            out[key] = f;
        } else if (const toml::value<std::string>* str = node.as_string()) {
            RawFigure f;
            f.source = str->get();
            out[key] = f;
        }
    }
}

} // namespace

std::map<std::string, RawFigure> read_raw_figures(const std::filesystem::path& file) {
    std::vector<Diagnostic> diags;
    detail::Reader rd(file.string(), diags);
    std::optional<toml::table> parsed;
    if (auto text = detail::read_input_text(file, rd)) parsed = detail::parse_toml_text(*text, rd);
    if (!parsed) throw std::runtime_error(InputError(std::move(diags)).what());
    const toml::table& root = *parsed;
    std::map<std::string, RawFigure> out;
    walk(root, "", out);
    return out;
}

} // namespace kdsim::scenario
