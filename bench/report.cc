#include "report.h"

namespace trellis::bench {

std::string Verdict(const std::optional<bool>& met) {
  if (!met) return "";
  return *met ? "met" : "MISSED";
}

std::string Report::Markdown(const std::string& machine_note) const {
  std::string out = "# Trellis engine benchmarks\n\n" + machine_note + "\n\n";
  out += "| benchmark | figure | measured | target | |\n| --- | --- | --- | --- | --- |\n";
  for (const auto& s : sections_) {
    for (const auto& f : s.figures) {
      out += "| " + s.title + " | " + f.name + " | " + f.measured + " | " + f.target + " | " +
             Verdict(f.met) + " |\n";
    }
  }
  for (const auto& s : sections_) {
    out += "\n## " + s.title + "\n\n" + s.method + "\n\n";
    for (const auto& f : s.figures) {
      out += "- **" + f.name + "**: " + f.measured;
      if (f.met) {
        out += " (target " + f.target + ", " + Verdict(f.met) + ")";
      } else if (!f.target.empty()) {
        out += " " + f.target;  // a figure with no target, e.g. "(reference)"
      }
      out += "\n";
    }
    for (const auto& r : s.raw) out += "- " + r + "\n";
  }
  return out;
}

}  // namespace trellis::bench
