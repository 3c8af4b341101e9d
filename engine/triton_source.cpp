// What a Triton kernel's Python source says about the values of its arguments: which pointer
// arguments hold values that reach a square root or a logarithm. See inductor_cache.h.
#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "replay/inductor_cache.h"

namespace replay {
namespace {

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

}  // namespace

std::set<std::string> positive_arguments(std::string_view body,
                                         const std::vector<std::string>& parameters) {
    const std::set<std::string_view> params(parameters.begin(), parameters.end());
    // Per variable, the parameters its value comes from. Statements are one per line, each an
    // assignment (`tmp3 = tmp1 - tmp2`, `a, b, c = triton_helpers.welford_reduce(...)`) or a call
    // (`tl.store(...)`); a reduction loop's carried variables need a second pass.
    std::map<std::string, std::set<std::string>, std::less<>> sources;
    std::set<std::string> positive;
    // One statement per entry: a call's arguments may go on over lines (`welford_reduce(` ...).
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
