"""The evaluators' shared machinery: metric selection, fair ranges, judged values, the group/reference loop.

Fair ranges arrive here resolved; nothing in this layer knows a metric by name.
"""
