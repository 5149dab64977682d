"""Tests of privacy_gate.report: the HTML report and the reviewer's pages."""
