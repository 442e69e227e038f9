"""Files for machines: the JSON document and its storage, baselines, JUnit properties, exports
for dashboards, and the session's outputs on the controller (report, baseline, comparison
gate, plots)."""
