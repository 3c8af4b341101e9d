// What a Triton kernel's Python source says about the values of its arguments: which pointer
// arguments hold values that reach a square root or a logarithm, and which hold indices checked
// against a bound. See inductor_cache.h.
#include <algorithm>
#include <cctype>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "replay/inductor_cache.h"
#include "wrapper_text.h"

namespace replay {
namespace {

using wrapper_text::integer;
using wrapper_text::split;
using wrapper_text::trim;

bool identifier_char(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
}

// The identifiers of an expression, in order (attribute names after a dot included: they never
// name a kernel variable, so they add nothing).
std::vector<std::string_view> identifiers(std::string_view text) {
    std::vector<std::string_view> out;
    std::size_t i = 0;
    while (i < text.size()) {
        if (!identifier_char(text[i]) || std::isdigit(static_cast<unsigned char>(text[i])) != 0) {
            // Skip a number whole (1e-05 is not the identifier e).
            if (std::isdigit(static_cast<unsigned char>(text[i])) != 0)
                while (i < text.size() && (identifier_char(text[i]) || text[i] == '.')) ++i;
            else
                ++i;
            continue;
        }
        const std::size_t start = i;
        while (i < text.size() && identifier_char(text[i])) ++i;
        out.push_back(text.substr(start, i - start));
    }
    return out;
}

// The text between the parenthesis at `open` and its match (to the end when unmatched).
std::string_view parenthesised(std::string_view text, std::size_t open) {
    int depth = 0;
    for (std::size_t i = open; i < text.size(); ++i) {
        if (text[i] == '(') ++depth;
        if (text[i] == ')' && --depth == 0) return text.substr(open + 1, i - open - 1);
    }
    return text.substr(open + 1);
}

// Math whose argument the recording's values kept in its domain: a negative number or a NaN
// takes the slow path of the correctly rounded square root (and makes NaNs that slow every
// division after it).
bool domain_restricted(std::string_view function) {
    static const std::set<std::string_view> names = {"sqrt", "sqrt_rn", "rsqrt", "log",
                                                     "log2", "log10",   "log1p", "pow"};
    return names.count(function) > 0;
}

// Reductions: a variance or a sum of exponentials the kernel computes is in the domain whatever
// the data, so their results carry no argument on (a layer norm's input stays signed data).
bool reduction(std::string_view function) {
    static const std::set<std::string_view> names = {
        "sum",  "welford_reduce", "welford_combine",      "welford", "reduce", "max2",
        "min2", "prod",           "online_softmax_reduce"};
    return names.count(function) > 0;
}

// The kernel's statements, one per entry: a call's arguments may go on over lines
// (`welford_reduce(` ...).
std::vector<std::string> statements(std::string_view body) {
    std::vector<std::string> lines;
    int open = 0;
    for (std::size_t start = 0; start < body.size();) {
        std::size_t end = body.find('\n', start);
        if (end == std::string_view::npos) end = body.size();
        const std::string_view line = body.substr(start, end - start);
        if (open > 0 && !lines.empty())
            lines.back().append(" ").append(line);
        else
            lines.emplace_back(line);
        for (char c : line) open += c == '(' ? 1 : c == ')' ? -1 : 0;
        open = std::max(open, 0);
        start = end + 1;
    }
    return lines;
}

// `name = expression` with one plain name on the left (not `==`, `<=`, a tuple or a call).
std::optional<std::pair<std::string_view, std::string_view>> assignment(std::string_view line) {
    line = trim(line);
    const std::size_t eq = line.find(" = ");
    if (eq == std::string_view::npos) return std::nullopt;
    const std::string_view target = trim(line.substr(0, eq));
    if (target.empty() || !std::all_of(target.begin(), target.end(), identifier_char))
        return std::nullopt;
    return std::pair{target, trim(line.substr(eq + 3))};
}

// A literal count or bound ("50000"): no sign, and short enough that it cannot overflow.
std::optional<std::int64_t> whole_number(std::string_view text) {
    text = trim(text);
    if (text.size() > 18 || text.starts_with('-')) return std::nullopt;
    return integer(text);
}

// The comma-separated arguments of the call whose parenthesis opens at `open`.
std::vector<std::string_view> call_arguments(std::string_view text, std::size_t open) {
    return split(parenthesised(text, open), ',');
}

}  // namespace

std::map<std::string, std::int64_t> index_bounds(std::string_view body,
                                                 const std::vector<std::string>& parameters) {
    const std::set<std::string_view> params(parameters.begin(), parameters.end());
    const std::vector<std::string> lines = statements(body);
    std::map<std::string_view, std::string_view> defined;  // variable -> its expression
    for (const std::string& line : lines)
        if (const auto a = assignment(line)) defined[a->first] = a->second;

    // The parameter a checked value was loaded from, through what Inductor writes between the
    // load and the check and nothing else: the wrap of a negative index (`tmp1 = tmp0 + 50000`,
    // `tmp2 = tmp0 < 0`, `tmp3 = tl.where(tmp2, tmp1, tmp0)`), casts and broadcasts. Any other
    // arithmetic (`tmp0 + 1`) would move values drawn below the bound past it: no parameter.
    std::function<bool(std::string_view, std::int64_t, int, std::set<std::string_view>&)> source;
    source = [&](std::string_view expr, std::int64_t bound, int depth,
                 std::set<std::string_view>& found) -> bool {
        expr = trim(expr);
        if (depth > 32) return false;
        if (whole_number(expr)) return true;
        if (const auto d = defined.find(expr); d != defined.end())
            return source(d->second, bound, depth + 1, found);
        auto call = [&](std::string_view name) -> std::optional<std::vector<std::string_view>> {
            if (!expr.starts_with(name) || expr.size() <= name.size() || expr[name.size()] != '(' ||
                parenthesised(expr, name.size()).size() + name.size() + 2 != expr.size())
                return std::nullopt;
            return call_arguments(expr, name.size());
        };
        if (const auto a = call("tl.load")) {
            const auto ids = identifiers(a->empty() ? std::string_view() : a->front());
            if (ids.empty() || !params.count(ids.front())) return false;
            found.insert(ids.front());
            return true;
        }
        if (const auto a = call("tl.broadcast_to"); a && !a->empty())
            return source(a->front(), bound, depth + 1, found);
        if (const auto a = call("tl.full"); a && a->size() >= 2)  // a constant, checked below
            return whole_number(a->at(1)).has_value();
        if (const auto a = call("tl.where"); a && a->size() == 3)  // the condition picks a branch
            return source(a->at(1), bound, depth + 1, found) &&
                   source(a->at(2), bound, depth + 1, found);
        if (const std::size_t to = expr.rfind(".to(");
            to != std::string_view::npos && expr.back() == ')' &&
            parenthesised(expr, to + 3).size() + to + 5 == expr.size())
            return source(expr.substr(0, to), bound, depth + 1, found);
        if (const std::size_t plus = expr.find(" + "); plus != std::string_view::npos) {
            // The wrap: the value plus the bound (only ever taken for a negative value).
            const std::string_view lhs = trim(expr.substr(0, plus)),
                                   rhs = trim(expr.substr(plus + 3));
            std::optional<std::int64_t> added = whole_number(rhs);
            if (const auto d = defined.find(rhs); !added && d != defined.end())
                if (constexpr std::string_view kFull = "tl.full("; d->second.starts_with(kFull)) {
                    const auto a = call_arguments(d->second, kFull.size() - 1);  // at its '('
                    if (a.size() >= 2) added = whole_number(a[1]);
                }
            return added == bound && source(lhs, bound, depth + 1, found);
        }
        return false;
    };

    std::map<std::string, std::int64_t> bounds;
    std::set<std::string> unsure;  // checked through other arithmetic somewhere: left alone
    static constexpr std::string_view kMessage = "index out of bounds: 0 <= ";
    for (const std::string& line : lines) {
        const std::size_t at = line.find(kMessage);
        if (line.find("tl.device_assert(") == std::string::npos || at == std::string::npos)
            continue;
        const std::size_t end = line.find('"', at);
        const std::string_view message =
            std::string_view(line).substr(at + kMessage.size(), end - at - kMessage.size());
        const std::size_t less = message.rfind(" < ");
        if (less == std::string_view::npos) continue;
        const std::optional<std::int64_t> bound = whole_number(message.substr(less + 3));
        std::set<std::string_view> found;
        const bool clean = bound && *bound > 0 && source(message.substr(0, less), *bound, 0, found);
        if (!clean || found.size() != 1) {
            // Every parameter that reaches such a check stays as it was (a symbolic bound: `ks0`).
            std::set<std::string_view> seen;
            std::function<void(std::string_view)> reach = [&](std::string_view expr) {
                for (std::string_view id : identifiers(expr)) {
                    if (params.count(id)) unsure.insert(std::string(id));
                    if (const auto d = defined.find(id);
                        d != defined.end() && seen.insert(id).second)
                        reach(d->second);
                }
            };
            reach(message);
            continue;
        }
        const std::string param(*found.begin());
        const auto [it, added] = bounds.emplace(param, *bound);
        if (!added) it->second = std::min(it->second, *bound);
    }
    for (const std::string& p : unsure) bounds.erase(p);
    return bounds;
}

std::set<std::string> positive_arguments(std::string_view body,
                                         const std::vector<std::string>& parameters) {
    const std::set<std::string_view> params(parameters.begin(), parameters.end());
    // Per variable, the parameters its value comes from. Statements are one per line, each an
    // assignment (`tmp3 = tmp1 - tmp2`, `a, b, c = triton_helpers.welford_reduce(...)`) or a call
    // (`tl.store(...)`); a reduction loop's carried variables need a second pass.
    std::map<std::string, std::set<std::string>, std::less<>> sources;
    std::set<std::string> positive;
    const std::vector<std::string> lines = statements(body);
    auto sources_of = [&](std::string_view expression) {
        std::set<std::string> from;
        for (std::string_view id : identifiers(expression)) {
            if (params.count(id)) from.insert(std::string(id));
            if (const auto s = sources.find(id); s != sources.end())
                from.insert(s->second.begin(), s->second.end());
        }
        return from;
    };
    for (int pass = 0; pass < 4; ++pass) {
        bool changed = false;
        for (const std::string& statement : lines) {
            const std::string_view line = statement;
            const std::size_t eq = line.find('=');
            const bool assignment = eq != std::string_view::npos && eq + 1 < line.size() &&
                                    line[eq + 1] != '=' && eq > 0 && line[eq - 1] != '=' &&
                                    line[eq - 1] != '!' && line[eq - 1] != '<' &&
                                    line[eq - 1] != '>' && line.find('(') > eq;
            const std::string_view rhs = assignment ? line.substr(eq + 1) : line;
            // Arguments of domain-restricted calls: `tl.sqrt_rn(tmp8)`, `libdevice.log(tmp2)`.
            const auto ids = identifiers(rhs);
            for (std::size_t k = 0; k < ids.size(); ++k) {
                if (!domain_restricted(ids[k])) continue;
                const std::size_t at =
                    static_cast<std::size_t>(ids[k].data() - rhs.data()) + ids[k].size();
                if (at >= rhs.size() || rhs[at] != '(') continue;
                for (const std::string& p : sources_of(parenthesised(rhs, at)))
                    changed |= positive.insert(p).second;
            }
            if (!assignment) continue;
            if (std::any_of(ids.begin(), ids.end(), reduction)) continue;
            const std::set<std::string> from = sources_of(rhs);
            for (std::string_view target : identifiers(line.substr(0, eq))) {
                auto& s = sources[std::string(target)];
                for (const std::string& p : from) changed |= s.insert(p).second;
            }
        }
        if (!changed) break;
    }
    return positive;
}

}  // namespace replay
