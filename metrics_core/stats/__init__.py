"""Pure statistics on counts and arrays: intervals, the AUC/DeLong kernel, distances, judging.

Nothing here knows a group, a window or a metric's name.
"""
