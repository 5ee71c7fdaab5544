#pragma once
/// \file
/// `--report FILE.html` on plan, estimate and search: the option and the atomic write of the
/// report (export/html_report.h).

#include <CLI/CLI.hpp>
#include <string>

#include "export/html_report.h"
#include "util/expected.h"

namespace autopar::cli {

/// Adds --report to `verb`, filling `path`.
void addReportOption(CLI::App& verb, std::string& path);

/// Renders `report` and writes it to `path` atomically; errors name --report.
Status writeHtmlReport(const std::string& path, const Expected<exporters::HtmlReport>& report);

}  // namespace autopar::cli
