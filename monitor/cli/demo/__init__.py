"""``fairwatch demo``: a toxicity model drifting into bias, written as it goes and monitored live."""
