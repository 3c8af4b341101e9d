#include "replay/ncu_command.h"

#include <cctype>

namespace replay {
namespace {

// The index of the bracket that opens the one closing at `close`, scanning backwards over
// nested (), <> and []; npos when unbalanced.
std::size_t opening(std::string_view s, std::size_t close) {
    int depth = 0;
    for (std::size_t i = close + 1; i-- > 0;) {
        const char c = s[i];
        if (c == ')' || c == '>' || c == ']') ++depth;
        if (c == '(' || c == '<' || c == '[') {
            if (--depth == 0) return i;
        }
    }
    return std::string_view::npos;
}

}  // namespace

std::string nvtx_range_name(std::string_view kernel_id, std::string_view kernel_name,
                            int iteration) {
    std::string name(kernel_id);
    name += ' ';
    name += kernel_name;
    // Iteration 0 is sequential mode's untimed plan pass.
    name += iteration > 0 ? " (iteration " + std::to_string(iteration) + ")" : " (plan)";
    return name;
}

std::string kernel_function_name(std::string_view s) {
    while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
    for (std::string_view suffix : {" const", " volatile"})
        if (s.ends_with(suffix)) s.remove_suffix(suffix.size());
    // The parameter list, then the template arguments, at the end.
    for (char close : {')', '>'}) {
        if (s.empty() || s.back() != close) continue;
        const std::size_t open = opening(s, s.size() - 1);
        if (open == std::string_view::npos || open == 0) break;
        s = s.substr(0, open);
        while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
    }
    // The last scope component, then whatever follows a space there (the return type).
    int depth = 0;
    std::size_t start = 0;
    for (std::size_t i = 0; i < s.size(); ++i) {
        const char c = s[i];
        if (c == '(' || c == '<' || c == '[') ++depth;
        if (c == ')' || c == '>' || c == ']') --depth;
        if (depth == 0 && c == ':' && i + 1 < s.size() && s[i + 1] == ':') start = i + 2;
        if (depth == 0 && c == ' ') start = i + 1;
    }
    return std::string(s.substr(start));
}

std::string shell_quote(std::string_view text) {
    bool plain = !text.empty();
    for (char c : text)
        plain = plain && (std::isalnum(static_cast<unsigned char>(c)) ||
                          std::string_view("_-./:=@,+%").find(c) != std::string_view::npos);
    if (plain) return std::string(text);
    std::string out = "'";
    for (char c : text) {
        if (c == '\'')
            out += "'\\''";
        else
            out += c;
    }
    return out + "'";
}

std::string regex_escape(std::string_view text) {
    std::string out;
    for (char c : text) {
        if (std::string_view("\\^$.|?*+()[]{}").find(c) != std::string_view::npos) out += '\\';
        out += c;
    }
    return out;
}

std::string ncu_command(const NcuTarget& t) {
    // Iteration 1 of that kernel: --warmup 0 --runs 1 issues it once, and --only keeps every
    // other kernel out; -c 1 stops after it.
    std::string range = nvtx_range_name(t.kernel_id, t.kernel_name, 1);
    range += '/';
    std::string pattern = "regex:";
    pattern += regex_escape(kernel_function_name(t.kernel_name));
    std::string cmd = "ncu --nvtx --nvtx-include ";
    cmd += shell_quote(range);
    cmd += " -k ";
    cmd += shell_quote(pattern);
    cmd += " -c 1 -o ";
    cmd += shell_quote(t.report);
    cmd += ' ';
    cmd += shell_quote(t.replay);
    // Appended piece by piece: GCC 12's -Wrestrict misreads `"literal" + std::string&&`.
    for (const auto& arg : t.source_args) {
        cmd += ' ';
        cmd += shell_quote(arg);
    }
    cmd += " --mode unique --only ";
    cmd += shell_quote(t.kernel_id);
    cmd += " --warmup 0 --runs 1 --no-sequential-check --nvtx --backend cuda --out ";
    cmd += shell_quote(t.out_dir);
    return cmd;
}

}  // namespace replay
