// Setting scenario keys on the parsed TOML tree before the loader reads it (`kdsim sweep --set`,
// a [sweep] table): the dotted key is resolved through tables and [[arrays]] of tables (by index,
// `machine[1]`, or by the element's `name`, `machine.board`), missing tables are created, and the
// value replaces or adds the leaf. The new nodes carry their origin as their source path, so the
// loader's own checks report a bad value under the --set argument that gave it.
#include "scenario/toml_reader.h"

#include <fmt/format.h>

#include <memory>

namespace kdsim::scenario::detail {

namespace {

struct Part {
    std::string name;
    std::optional<std::size_t> index;
};

bool bare_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

// "machine[0].overrides.\"simd.save\"" -> {machine,[0]}, {overrides}, {simd.save}; "" on success,
// else why the key is malformed.
std::string split_key(std::string_view key, std::vector<Part>& parts) {
    std::size_t i = 0;
    while (true) {
        Part p;
        if (i < key.size() && key[i] == '"') {
            std::size_t end = key.find('"', i + 1);
            if (end == std::string_view::npos) return "a quoted part has no closing '\"'";
            p.name = std::string(key.substr(i + 1, end - i - 1));
            i = end + 1;
        } else {
            std::size_t start = i;
            while (i < key.size() && bare_char(key[i])) ++i;
            p.name = std::string(key.substr(start, i - start));
        }
        if (p.name.empty()) return fmt::format("an empty part at character {}", i + 1);
        if (i < key.size() && key[i] == '[') {
            std::size_t end = key.find(']', i);
            std::string_view digits = key.substr(i + 1, end == std::string_view::npos ? 0 : end - i - 1);
            if (end == std::string_view::npos || digits.empty() || digits.size() > 6 ||
                digits.find_first_not_of("0123456789") != std::string_view::npos)
                return fmt::format("expected an index such as [0] after '{}'", p.name);
            p.index = std::stoul(std::string(digits));
            i = end + 1;
        }
        parts.push_back(std::move(p));
        if (i == key.size()) return "";
        if (key[i] != '.') return fmt::format("unexpected '{}' at character {}", key[i], i + 1);
        ++i;
    }
}

// The value node of `text` (a TOML value, or else a string), with `origin` as its source path.
toml::table parse_value(const std::string& text, const std::string& origin) {
    try {
        toml::table t = toml::parse("v = " + text, origin);
        if (t.size() == 1 && t.contains("v")) return t;
    } catch (const toml::parse_error&) {
    }
    return toml::parse("v = " + toml_string(text), origin);
}

// Moves `n` into `into[key]` (move keeps the node's source).
void move_into(toml::table& into, const toml::key& key, toml::node& n) {
    n.visit([&](auto& v) { into.insert_or_assign(key, std::move(v)); });
}

std::vector<std::string_view> names_of(const toml::table& t) {
    std::vector<std::string_view> out;
    for (auto&& [k, v] : t) out.push_back(k.str());
    return out;
}

class Assigner {
public:
    Assigner(const Assignment& a, Reader& r)
        : a_(a), r_(r), origin_(std::make_shared<const std::string>(a.origin)), at_{{0, 0}, {0, 0}, origin_} {}

    void apply(toml::table& root) {
        std::vector<Part> parts;
        if (std::string why = split_key(a_.key, parts); !why.empty()) return fail(fmt::format("not a key: {}", why));
        toml::table* t = &root;
        std::string so_far;
        for (std::size_t i = 0; i < parts.size(); ++i) {
            const Part& p = parts[i];
            std::string here = so_far.empty() ? join_key("", p.name) : join_key(so_far, p.name);
            if (p.name == "overrides" && !p.index && i + 1 < parts.size()) {
                // a profile figure's key is one dotted string: `machine[0].overrides.simd.save`
                std::string figure;
                for (std::size_t j = i + 1; j < parts.size(); ++j) {
                    if (parts[j].index) return fail(fmt::format("a profile figure key has no index: {}", a_.key));
                    figure += (figure.empty() ? "" : ".") + parts[j].name;
                }
                toml::table* o = subtable(*t, p.name, here);
                if (!o) return;
                return set(*o, figure);
            }
            if (i + 1 == parts.size() && !p.index) return set(*t, p.name);
            toml::node* n = t->get(p.name);
            if (p.index) {
                toml::array* arr = n ? n->as_array() : nullptr;
                if (!arr) return missing(*t, p.name, here, "an array");
                std::string elem = index_key(here, *p.index);
                if (*p.index >= arr->size())
                    return fail(fmt::format("no {}: the scenario has {} {} element(s), {}[0] to {}[{}]", elem,
                                            arr->size(), here, here, here, arr->size() ? arr->size() - 1 : 0));
                toml::node* e = arr->get(*p.index);
                if (i + 1 == parts.size()) {
                    toml::table v = parse_value(a_.value, a_.origin);
                    v.get("v")->visit([&](auto& x) { arr->replace(arr->cbegin() + static_cast<std::ptrdiff_t>(*p.index), std::move(x)); });
                    return;
                }
                if (!e->is_table()) return fail(fmt::format("{} is {}, not a table", elem, describe(e)));
                t = e->as_table();
                so_far = elem;
                continue;
            }
            if (n && n->is_array_of_tables()) { // by name: `machine.board`
                toml::array& arr = *n->as_array();
                if (i + 1 == parts.size())
                    return fail(fmt::format("{} is an array of tables: give an element, {}[0] or {}.<name>", here, here, here));
                const Part& sel = parts[i + 1];
                std::vector<std::string_view> names;
                toml::table* found = nullptr;
                std::size_t at = 0;
                for (std::size_t k = 0; k < arr.size(); ++k) {
                    const toml::table* e = arr.get(k)->as_table();
                    const toml::node* nm = e ? e->get("name") : nullptr;
                    if (!nm || !nm->is_string()) continue;
                    names.push_back(nm->as_string()->get());
                    if (nm->as_string()->get() == sel.name && !found) found = arr.get(k)->as_table(), at = k;
                }
                if (!found) {
                    std::vector<std::string> all(names.begin(), names.end());
                    return fail(fmt::format("no {} named '{}'; {}the names are: {} (or give an index, {}[0])", here,
                                            sel.name, did_you_mean(sel.name, names),
                                            all.empty() ? std::string("none") : join_list(all), here));
                }
                if (sel.index) return fail(fmt::format("'{}' names one element of {}: it takes no index", sel.name, here));
                t = found;
                so_far = index_key(here, at);
                ++i;
                if (i + 1 == parts.size()) return fail(fmt::format("{} is a table: give one of its keys", so_far));
                continue;
            }
            t = subtable(*t, p.name, here);
            if (!t) return;
            so_far = here;
        }
    }

private:
    void fail(std::string message) { r_.error(at_, a_.key, std::move(message)); }

    void missing(const toml::table& t, const std::string& name, const std::string& here, std::string_view what) {
        const toml::node* n = t.get(name);
        if (n) return fail(fmt::format("{} is {}, not {}", here, describe(n), what));
        std::vector<std::string_view> have = names_of(t);
        std::vector<std::string> all(have.begin(), have.end());
        fail(fmt::format("no {} in the scenario; {}the keys there are: {}", here, did_you_mean(name, have),
                         all.empty() ? std::string("none") : join_list(all)));
    }

    // t[name] as a table, created when absent (the loader then says if the name is not a key).
    toml::table* subtable(toml::table& t, const std::string& name, const std::string& here) {
        toml::node* n = t.get(name);
        if (!n) {
            toml::table fresh = toml::parse("v = {}", a_.origin);
            move_into(t, toml::key(name, toml::source_region(at_)), *fresh.get("v"));
            n = t.get(name);
        }
        if (!n->is_table()) {
            fail(fmt::format("{} is {}, not a table: it has no keys", here, describe(n)));
            return nullptr;
        }
        return n->as_table();
    }

    void set(toml::table& t, const std::string& name) {
        toml::table v = parse_value(a_.value, a_.origin);
        move_into(t, toml::key(name, toml::source_region(at_)), *v.get("v"));
    }

    const Assignment& a_;
    Reader& r_;
    std::shared_ptr<const std::string> origin_;
    toml::source_region at_;
};

} // namespace

std::string toml_string(std::string_view s) {
    std::string out = "\"";
    for (char c : s) {
        if (c == '"' || c == '\\') out += '\\', out += c;
        else if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) out += fmt::format("\\u{:04X}", static_cast<int>(c));
        else out += c;
    }
    return out + "\"";
}

void apply_assignments(toml::table& root, const std::vector<Assignment>& assignments, Reader& r) {
    for (const Assignment& a : assignments) Assigner(a, r).apply(root);
}

} // namespace kdsim::scenario::detail
