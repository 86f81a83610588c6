// The benchmark report: one section per benchmark, each with its headline
// figures (measured against the target) and the raw rounds behind them.
// Rendered once as markdown, which is also what stdout shows.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace trellis::bench {

struct Figure {
  std::string name;
  std::string measured;
  std::string target;       // "" when the figure has none
  std::optional<bool> met;  // unset when there is no target
};

struct Section {
  std::string title;
  std::string method;  // one paragraph: what was measured, how
  std::vector<Figure> figures;
  std::vector<std::string> raw;  // one bullet per raw series
};

class Report {
 public:
  void Add(Section section) { sections_.push_back(std::move(section)); }
  // A summary table of every figure, then each section in full.
  std::string Markdown(const std::string& machine_note) const;

 private:
  std::vector<Section> sections_;
};

// "met" / "MISSED" / "" for a figure's verdict.
std::string Verdict(const std::optional<bool>& met);

}  // namespace trellis::bench
