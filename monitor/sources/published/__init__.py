"""``kind: published``: counts that replicas published to a shared store (the fleet)."""
