"""The run report: report.html and report.md."""
