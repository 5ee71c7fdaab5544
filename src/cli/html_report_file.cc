#include "cli/html_report_file.h"

#include "util/atomic_file.h"

namespace autopar::cli {

void addReportOption(CLI::App& verb, std::string& path) {
  verb.add_option("--report", path,
                  "also write a self-contained HTML report: the step's pipeline timeline, memory "
                  "per stage against the device, and the candidates (written even when the plan "
                  "does not fit)");
}

Status writeHtmlReport(const std::string& path, const Expected<exporters::HtmlReport>& report) {
  if (!report) return report.error().in("--report");
  if (auto written = writeFileAtomically(path, exporters::renderHtmlReport(*report)); !written) {
    return written.error().in("--report");
  }
  return {};
}

}  // namespace autopar::cli
