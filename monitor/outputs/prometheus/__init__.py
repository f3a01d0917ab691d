"""Everything Prometheus reads: the exported series (:mod:`~monitor.outputs.prometheus.collector`),
the alerting rules (:mod:`~monitor.outputs.prometheus.rules`) and the OpenMetrics history of a
backfill (:mod:`~monitor.outputs.prometheus.backfill`)."""
