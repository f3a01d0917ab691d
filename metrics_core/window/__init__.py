"""A window's data as the evaluators read it: score tables, groups and their comparisons, labels."""
