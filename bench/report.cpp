#include "report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "fftconv/version.hpp"

namespace fftconv::bench {
const char* to_string(pass g) noexcept {
    switch (g) {
        case pass::forward: return "forward";
        case pass::data_gradient: return "data_gradient";
        case pass::filter_gradient: return "filter_gradient";
    }
    return "unknown";
}

double unit_roundoff(element_type e) {
    switch (e) {
        case element_type::bfloat16: return 1.0 / 256;   // 2^-8: 8 significant bits
        case element_type::float16: return 1.0 / 2048;   // 2^-11: 11
        case element_type::float32: break;
    }
    return 0;
}

double relative_l2_bar(pass g, element_type e) {
    switch (e) {
        case element_type::bfloat16: return 1.0 / 256;
        case element_type::float16: return 1.0 / 1024;
        case element_type::float32: break;
    }
    return g == pass::filter_gradient ? reference::max_filter_gradient_l2 : reference::max_relative_l2;
}

bool passes(const shape_result& s, const algorithm_result& a) {
    return a.accuracy.passes(relative_l2_bar(s.pass, a.element));
}

reference::accuracy compare_output(const std::vector<float>& y, const std::vector<double>& exact, element_type e) {
    reference::accuracy a = reference::compare(y, exact);
    if (e == element_type::float32 || y.size() != exact.size()) return a;
    const double u = unit_roundoff(e) * 1.01;
    a.worst_fraction = 0;
    a.worst_index = -1;
    for (std::size_t k = 0; k < y.size(); ++k) {
        if (!std::isfinite(y[k])) continue;
        const double magnitude = std::abs(exact[k]);
        const double fraction = std::abs(double(y[k]) - exact[k]) /
                                (u * magnitude + reference::absolute_tolerance + reference::relative_tolerance * magnitude);
        if (fraction > a.worst_fraction) {
            a.worst_fraction = fraction;
            a.worst_index = std::int64_t(k);
        }
    }
    return a;
}

namespace {

// "56x56 K31 C128 B64 dw pad15 +bias": image, kernel (KHxKW when not
// square), channels (Cin->Cout when they differ), batch, then only what is
// not the default: dw (groups = Cin) or gG, padding (PHxPW when the axes
// differ), +bias.
std::string shape_label(const shape_result& s) {
    const problem& p = s.shape;
    std::ostringstream o;
    o << p.height << "x" << p.width << " K" << p.kernel.height;
    if (p.kernel.width != p.kernel.height) o << "x" << p.kernel.width;
    o << " C" << p.in_channels;
    if (p.out_channels != p.in_channels) o << "->" << p.out_channels;
    o << " B" << p.batch;
    if (p.groups != 1) {
        if (p.groups == p.in_channels) o << " dw";
        else o << " g" << p.groups;
    }
    if (p.padding != extent2d{0}) {
        o << " pad" << p.padding.height;
        if (p.padding.width != p.padding.height) o << "x" << p.padding.width;
    }
    if (s.bias) o << " +bias";
    if (s.pass == pass::data_gradient) o << " dx";
    if (s.pass == pass::filter_gradient) o << " dw";
    return o.str();
}

// The widest shape label, for the stdout table and the SVG's left margin.
std::size_t label_width(const std::vector<shape_result>& shapes) {
    std::size_t w = 0;
    for (const auto& s : shapes) w = std::max(w, shape_label(s).size());
    return w;
}

const algorithm_result* find(const shape_result& s, const std::string& name) {
    for (const auto& a : s.algorithms)
        if (a.name == name && a.ran) return &a;
    return nullptr;
}

std::vector<std::string> algorithm_names(const std::vector<shape_result>& shapes) {
    std::vector<std::string> names;
    for (const auto& s : shapes)
        for (const auto& a : s.algorithms)
            if (std::find(names.begin(), names.end(), a.name) == names.end()) names.push_back(a.name);
    return names;
}

// `s` with every byte that is not part of a well-formed UTF-8 sequence
// replaced by U+FFFD: SVG and Markdown readers reject or garble the rest.
std::string utf8_text(const std::string& s) {
    std::string out;
    const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(s[i]); };
    for (std::size_t i = 0; i < s.size();) {
        const unsigned char lead = byte(i);
        const std::size_t length = lead < 0x80 ? 1 : (lead >> 5) == 0x6 ? 2 : (lead >> 4) == 0xe ? 3
                                 : (lead >> 3) == 0x1e ? 4 : 0;
        bool ok = length > 0 && i + length <= s.size();
        for (std::size_t k = 1; ok && k < length; ++k) ok = (byte(i + k) >> 6) == 0x2;
        if (ok) {
            out.append(s, i, length);
            i += length;
        } else {
            out += "\xEF\xBF\xBD";
            ++i;
        }
    }
    return out;
}

// Text for SVG (XML 1.0): markup characters escaped; control characters,
// which XML cannot carry even escaped, replaced.
std::string xml_text(const std::string& text) {
    const std::string s = utf8_text(text);
    std::string out;
    for (char c : s) {
        switch (c) {
            case '&': out += "&amp;"; break;
            case '<': out += "&lt;"; break;
            case '>': out += "&gt;"; break;
            case '"': out += "&quot;"; break;
            case '\'': out += "&apos;"; break;
            default:
                if (static_cast<unsigned char>(c) < 0x20 && c != '\t') out += '?';
                else out += c;
        }
    }
    return out;
}

// Text for a Markdown table cell: no line breaks, no cell separators, no
// backticks that would open a code span.
std::string markdown_text(const std::string& text) {
    const std::string s = utf8_text(text);
    std::string out;
    for (char c : s) {
        if (c == '|') out += "\\|";
        else if (c == '`') out += '\'';
        else if (static_cast<unsigned char>(c) < 0x20) out += ' ';
        else out += c;
    }
    return out;
}

std::string number(double v) {
    if (!std::isfinite(v)) return "null";
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.6g", v);
    return buf;
}

std::ofstream open_or_throw(const std::string& path) {
    std::ofstream f(path);
    if (!f) throw std::runtime_error("cannot write " + path);
    return f;
}

}  // namespace

std::vector<summary_row> summarize(const std::vector<shape_result>& shapes) {
    const bool any_benchmark = std::any_of(shapes.begin(), shapes.end(),
                                           [](const shape_result& s) { return s.role == "benchmark"; });
    std::vector<summary_row> rows;
    for (const std::string& name : algorithm_names(shapes)) {
        summary_row r{name};
        double log_sum = 0;
        bool complete = true;
        for (const auto& s : shapes) {
            if (any_benchmark && s.role != "benchmark") continue;
            const algorithm_result* a = find(s, name);
            if (a == nullptr) {
                complete = false;
                continue;
            }
            ++r.shapes;
            r.total_mean_ms += a->time.mean_ms;
            log_sum += std::log(a->time.mean_ms);
        }
        r.geomean_mean_ms = r.shapes ? std::exp(log_sum / r.shapes) : 0;
        if (!complete) r.name += " (incomplete)";
        rows.push_back(r);
    }
    return rows;
}

void print_table(const run_info& info, const std::vector<shape_result>& shapes) {
    std::printf("\nfftconv-bench, suite %s, on %s (driver %s, CUDA runtime %s), fftconv %s, commit %s\n",
                info.suite.c_str(), info.gpu.c_str(), info.driver.c_str(), info.cuda_runtime.c_str(),
                fftconv::version_string(), info.commit.c_str());
    std::printf("%d timed calls per algorithm and shape, %s, %s%s\n", info.repetitions,
                info.l2_flush ? "L2 flushed before each" : "L2 NOT flushed",
                info.reuse_filter ? "filter transformed once and reused" : "fresh filter FFT in every call",
                info.replay ? "" : ", no replay of repeated calls");
    if (info.element != element_type::float32)
        std::printf("activations %s (fftconv reads and writes them, computes in FP32); their bar: rel L2 <= %.3g, "
                    "every element within %.3g |exact| more than the float bar\n",
                    to_string(info.element), relative_l2_bar(pass::forward, info.element),
                    unit_roundoff(info.element) * 1.01);
    std::printf("\n");
    const int lw = int(std::max<std::size_t>(24, label_width(shapes)));
    int nw = 20;  // the algorithm column: wider only for a longer name ("fftconv (cast passes)")
    for (const auto& s : shapes)
        for (const auto& a : s.algorithms) nw = std::max(nw, int(a.name.size()));
    std::printf("%-*s %-*s %-26s %9s %9s %9s %10s %8s %9s %8s %8s\n", lw, "shape", nw, "algorithm", "detail",
                "mean ms", "median", "min", "rel L2", "worst", "peak MiB", "speedup", "host us");
    for (const auto& s : shapes) {
        const algorithm_result* ours = find(s, "fftconv");
        for (const auto& a : s.algorithms) {
            if (!a.ran) {
                std::printf("%-*s %-*s %s\n", lw, shape_label(s).c_str(), nw, a.name.c_str(), a.detail.c_str());
                continue;
            }
            const double speedup = ours ? a.time.mean_ms / ours->time.mean_ms : 0;
            std::printf("%-*s %-*s %-26s %9.4f %9.4f %9.4f %10.3g %8.3f %9.1f %7.2fx %8.1f%s\n", lw,
                        shape_label(s).c_str(), nw, a.name.c_str(), a.detail.c_str(), a.time.mean_ms,
                        a.time.median_ms, a.time.min_ms, a.accuracy.relative_l2,
                        a.accuracy.worst_fraction, double(a.peak_bytes) / (1 << 20), speedup, a.time.host_us,
                        passes(s, a) ? "" : "   <-- FAILS the accuracy bar");
        }
    }
    std::printf("\n%-28s %6s %14s %16s\n", "totals (benchmark shapes)", "shapes", "total mean ms",
                "geomean mean ms");
    for (const auto& r : summarize(shapes))
        std::printf("%-28s %6d %14.4f %16.4f\n", r.name.c_str(), r.shapes, r.total_mean_ms, r.geomean_mean_ms);
}

void write_json(const std::string& path, const run_info& info, const std::vector<shape_result>& shapes) {
    // ordered_json keeps the fields in the order they are written here.
    using json = nlohmann::ordered_json;
    json out = {
        {"tool", "fftconv-bench"},
        {"schema_version", 4},
        {"fftconv_version", fftconv::version_string()},  // the library loaded (fftconv_version())
        {"suite", info.suite},
        {"gpu", info.gpu},
        {"driver", info.driver},
        {"cuda_runtime", info.cuda_runtime},
        {"cufft", info.cufft},
        {"cublas", info.cublas},
        {"cudnn", info.cudnn},
        {"commit", info.commit},
        {"date", info.date},
        {"repetitions", info.repetitions},
        {"l2_flush", info.l2_flush},
        {"l2_flush_bytes", info.l2_flush_bytes},
        {"reuse_filter", info.reuse_filter},
        {"replay", info.replay},
    };
    const bool half = info.element != element_type::float32;
    if (half) out["element"] = to_string(info.element);  // absent: float32 (the float32 output is unchanged)
    json bar = {{"max_relative_l2", reference::max_relative_l2},
                {"max_relative_l2_filter_gradient", reference::max_filter_gradient_l2},
                {"elementwise", "|y - exact| <= " + number(reference::absolute_tolerance) + " + " +
                                    number(reference::relative_tolerance) + " |exact|"}};
    if (half) {
        const std::string name = to_string(info.element);
        bar["max_relative_l2_" + name] = relative_l2_bar(pass::forward, info.element);
        bar["elementwise_" + name] = "|y - exact| <= " + number(unit_roundoff(info.element)) + " * 1.01 |exact| + " +
                                     number(reference::absolute_tolerance) + " + " +
                                     number(reference::relative_tolerance) + " |exact|";
    }
    out["accuracy_bar"] = bar;
    // Non-finite figures (a failed run) are written as null.
    auto number = [](double v) { return std::isfinite(v) ? json(v) : json(nullptr); };
    json shape_list = json::array();
    for (const auto& s : shapes) {
        const problem& p = s.shape;
        json algorithms = json::array();
        for (const auto& a : s.algorithms) {
            json entry = {{"name", a.name}, {"detail", a.detail}, {"ran", a.ran}};
            if (half) entry["element"] = to_string(a.element);
            if (a.ran) {
                json samples = json::array();
                for (float sample : a.time.samples_ms) samples.push_back(number(sample));
                entry.update(json{
                    {"mean_ms", number(a.time.mean_ms)},
                    {"median_ms", number(a.time.median_ms)},
                    {"min_ms", number(a.time.min_ms)},
                    {"host_us_per_call", number(a.time.host_us)},
                    {"relative_l2", number(a.accuracy.relative_l2)},
                    {"worst_fraction_of_tolerance", number(a.accuracy.worst_fraction)},
                    {"non_finite", a.accuracy.non_finite},
                    {"passes", passes(s, a)},
                    {"workspace_bytes", a.workspace_bytes},
                    {"peak_bytes", a.peak_bytes},
                    {"samples_ms", samples},
                });
            }
            algorithms.push_back(entry);
        }
        json shape = {{"role", s.role}, {"batch", p.batch}, {"in_channels", p.in_channels},
                      {"out_channels", p.out_channels}, {"height", p.height}, {"width", p.width}};
        if (p.kernel.height == p.kernel.width) shape["kernel_extent"] = p.kernel.height;  // schema 1's key
        shape.update(json{{"kernel_height", p.kernel.height}, {"kernel_width", p.kernel.width},
                          {"padding_height", p.padding.height}, {"padding_width", p.padding.width},
                          {"groups", p.groups}, {"bias", s.bias}, {"pass", to_string(s.pass)}, {"seed", s.seed},
                          {"algorithms", algorithms}});
        shape_list.push_back(shape);
    }
    out["shapes"] = shape_list;
    json summary = json::array();
    for (const auto& row : summarize(shapes))
        summary.push_back({{"name", row.name}, {"shapes", row.shapes},
                           {"total_mean_ms", number(row.total_mean_ms)},
                           {"geomean_mean_ms", number(row.geomean_mean_ms)}});
    out["summary"] = summary;
    std::ofstream f = open_or_throw(path);
    // Invalid UTF-8 (a --commit of arbitrary bytes) becomes U+FFFD instead of an exception.
    f << out.dump(2, ' ', false, json::error_handler_t::replace) << "\n";
}

void write_markdown(const std::string& path, const run_info& info, const std::vector<shape_result>& shapes) {
    std::ofstream f = open_or_throw(path);
    f << "fftconv-bench, suite " << markdown_text(info.suite) << ", on " << markdown_text(info.gpu) << ", driver " << info.driver << ", CUDA " << info.cuda_runtime
      << ", cuFFT " << info.cufft << ", cuBLAS " << info.cublas << ", cuDNN " << info.cudnn
      << ", fftconv " << fftconv::version_string() << ", commit `" << markdown_text(info.commit) << "`, " << info.date << ". " << info.repetitions
      << " timed calls each, " << (info.l2_flush ? "L2 flushed before every call" : "no L2 flush")
      << ", " << (info.reuse_filter ? "filter transformed once" : "filter FFT in every call")
      << (info.replay ? ", repeated calls replayed as CUDA graphs" : ", no replay of repeated calls")
      << ". Accuracy against a float64 direct convolution: relative L2 (≤ " << number(reference::max_relative_l2)
      << " passes; ≤ " << number(reference::max_filter_gradient_l2)
      << " for a filter gradient), and the worst element as a fraction of " << number(reference::absolute_tolerance) << " + "
      << number(reference::relative_tolerance) << "·|exact| (≤ 1 passes). Every algorithm computes the "
      << "whole operator: padding, groups and bias where the shape has them (dw: groups = C; pad: zeros "
      << "on each side; +bias: a bias added).";
    if (info.element != element_type::float32) {
        const std::string name = to_string(info.element);
        f << " Activations (x and y; dy and dx) are " << name << ": fftconv reads and writes them and computes "
          << "in FP32, so its output is held to the bar of one rounding, relative L2 ≤ "
          << number(relative_l2_bar(pass::forward, info.element)) << " and every element within "
          << number(unit_roundoff(info.element)) << "·1.01·|exact| more than the float bar, against the oracle "
          << "on the widened inputs. fftconv (cast passes): the float call between a cast of x to float and a "
          << "cast of y back, each one elementwise kernel, timed with the call. cuDNN peers with " << name
          << " in the detail take " << name << " tensors (w and bias rounded too; FP32 compute) and are "
          << "checked against the oracle on their own rounded operands.";
    }
    f << "\n\n";
    f << "| shape (H×W K C B, groups, padding, bias) | algorithm | detail | mean ms | median ms | min ms | rel L2 | worst | peak MiB | fftconv speedup | host µs/call |\n";
    f << "|---|---|---|--:|--:|--:|--:|--:|--:|--:|--:|\n";
    char buf[1024];
    for (const auto& s : shapes) {
        const algorithm_result* ours = find(s, "fftconv");
        for (const auto& a : s.algorithms) {
            if (!a.ran) {  // no figures: why, in the detail cell
                f << "| " << markdown_text(shape_label(s)) << " | " << markdown_text(a.name) << " | "
                  << markdown_text(a.detail) << " | | | | | | | | |\n";
                continue;
            }
            std::snprintf(buf, sizeof buf, "| %s | %s | %s | %.4f | %.4f | %.4f | %.2g | %.3f%s | %.1f | %s | %.1f |\n",
                          shape_label(s).c_str(), a.name.c_str(), markdown_text(a.detail).c_str(),
                          a.time.mean_ms, a.time.median_ms, a.time.min_ms, a.accuracy.relative_l2,
                          a.accuracy.worst_fraction, passes(s, a) ? "" : " **FAIL**",
                          double(a.peak_bytes) / (1 << 20),
                          ours && &a != ours ? (std::to_string(a.time.mean_ms / ours->time.mean_ms).substr(0, 6) + "×").c_str() : "",
                          a.time.host_us);
            f << buf;
        }
    }
    f << "\n| totals over the benchmark shapes | shapes | total mean ms | geomean ms |\n|---|--:|--:|--:|\n";
    for (const auto& r : summarize(shapes)) {
        std::snprintf(buf, sizeof buf, "| %s | %d | %.4f | %.4f |\n", r.name.c_str(), r.shapes,
                      r.total_mean_ms, r.geomean_mean_ms);
        f << buf;
    }
}

void write_svg(const std::string& path, const run_info& info, const std::vector<shape_result>& shapes) {
    // Grouped horizontal bars, one group per shape, log-scaled time axis
    // (cuDNN and fftconv differ by up to two orders of magnitude).
    const std::vector<std::string> names = algorithm_names(shapes);
    const char* colors[] = {"#1f77b4", "#d62728", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b"};
    double lo = 1e30, hi = 0;
    for (const auto& s : shapes)
        for (const auto& a : s.algorithms)
            if (a.ran) {
                lo = std::min(lo, a.time.mean_ms);
                hi = std::max(hi, a.time.mean_ms);
            }
    if (hi <= 0) lo = 0.01, hi = 1;
    const double log_lo = std::floor(std::log10(lo)), log_hi = std::ceil(std::log10(hi));
    // The labels are right-aligned before the bars: ~7 px a character at 12 px.
    const int left = std::max(210, 7 * int(label_width(shapes)) + 20);
    const int width = 620, bar = 14, gap = 10, top = 60;
    const int group = int(names.size()) * bar + gap;
    // The legend: up to four names a row (a --tiles sweep can name many).
    const int legend_step = 180, legend_per_row = 4, legend_row = 18;
    const int legend_rows = std::max(1, (int(names.size()) + legend_per_row - 1) / legend_per_row);
    const int height = top + int(shapes.size()) * group + 70 + (legend_rows - 1) * legend_row;
    const int axis_bottom = top + int(shapes.size()) * group + 10;
    auto x_of = [&](double ms) {
        return left + width * (std::log10(ms) - log_lo) / std::max(log_hi - log_lo, 1.0);
    };
    std::ofstream f = open_or_throw(path);
    f << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << left + width + 40 << "\" height=\""
      << height << "\" font-family=\"sans-serif\" font-size=\"12\">\n";
    f << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
    const std::string compared = info.element == element_type::float32
                                     ? std::string("strict FP32")
                                     : std::string(to_string(info.element)) + " activations, FP32 compute";
    f << "<text x=\"10\" y=\"20\" font-size=\"15\">fftconv vs cuDNN (" << compared
      << "): mean time per call, ms, log scale</text>\n";
    f << "<text x=\"10\" y=\"38\" fill=\"#555\">suite " << xml_text(info.suite) << ", " << xml_text(info.gpu) << ", commit " << xml_text(info.commit) << ", "
      << info.repetitions << " calls, " << (info.l2_flush ? "L2 flushed" : "no flush") << "</text>\n";
    for (double e = log_lo; e <= log_hi; e += 1) {
        const double x = x_of(std::pow(10.0, e));
        f << "<line x1=\"" << x << "\" y1=\"" << top - 5 << "\" x2=\"" << x << "\" y2=\""
          << axis_bottom << "\" stroke=\"#ddd\"/>\n";
        f << "<text x=\"" << x << "\" y=\"" << axis_bottom + 15 << "\" text-anchor=\"middle\">"
          << number(std::pow(10.0, e)) << "</text>\n";
    }
    for (std::size_t i = 0; i < shapes.size(); ++i) {
        const int y0 = top + int(i) * group;
        f << "<text x=\"" << left - 8 << "\" y=\"" << y0 + group / 2 << "\" text-anchor=\"end\">"
          << xml_text(shape_label(shapes[i])) << "</text>\n";
        for (std::size_t k = 0; k < names.size(); ++k) {
            const algorithm_result* a = find(shapes[i], names[k]);
            if (a == nullptr) continue;
            const double x1 = x_of(a->time.mean_ms);
            f << "<rect x=\"" << left << "\" y=\"" << y0 + int(k) * bar << "\" width=\""
              << std::max(1.0, x1 - left) << "\" height=\"" << bar - 2 << "\" fill=\"" << colors[k % 6]
              << "\"/>\n";
            f << "<text x=\"" << x1 + 4 << "\" y=\"" << y0 + int(k) * bar + bar - 4 << "\" font-size=\"10\">"
              << number(a->time.mean_ms) << "</text>\n";
        }
    }
    for (std::size_t k = 0; k < names.size(); ++k) {
        const int x = left + int(k) % legend_per_row * legend_step;
        const int y = axis_bottom + 40 + int(k) / legend_per_row * legend_row;
        f << "<rect x=\"" << x << "\" y=\"" << y << "\" width=\"12\" height=\"12\" fill=\""
          << colors[k % 6] << "\"/><text x=\"" << x + 16 << "\" y=\"" << y + 10 << "\">" << xml_text(names[k])
          << "</text>\n";
    }
    f << "</svg>\n";
}

}  // namespace fftconv::bench
